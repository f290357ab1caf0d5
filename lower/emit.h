// Pass 6, emit: one counter per task group (in first-use order), waits from the TensorMap
// dependencies as all-joins (threshold = every task of the producing group), tasks in order.
#pragma once

#include "ir/result.h"
#include "lower/plan.h"

namespace amk::lower {

/// Fills p.program.counters and p.program.tasks; returns an error if a task needs more waits
/// than the ABI allows.
ir::Status emit(Plan& p);

}  // namespace amk::lower
