// Pass 1, tile: graph nodes -> tasks (GEMV/GEMM column tiles, reshapes, split-KV shards), with
// AMK's buffer order, names, labels, params and estimates.
#pragma once

#include "lower/plan.h"

namespace amk::lower {

/// Creates the buffers and one PlanTask per tile/shard of every node of `p.graph`.
void tile(Plan& p);

}  // namespace amk::lower
