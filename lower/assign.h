// Pass 4, assign workers: sets Task.sm by sm_assignment (round_robin, load_balance = earliest-
// finish list scheduling over the cost model in queue order, or an explicit {task id: sm} map).
#pragma once

#include <string>

#include "lower/plan.h"

namespace amk::lower {

/// Assigns every task a worker; returns an error naming /config/sm_assignment on a bad map.
std::string assign_workers(Plan& p);

}  // namespace amk::lower
