// Pass 1, tile: graph nodes -> tasks (GEMV/GEMM column tiles, reshapes, split-KV shards), with
// AMK's buffer order, names, labels, params and estimates.
#pragma once

#include <string>

#include "lower/plan.h"

namespace amk::lower {

/// What tile's tasks and buffers depend on besides the model, target and options: the tile width
/// of each linear output width and the attention's KV partitions (knobs that change neither, as a
/// kv_block under n_partitions or at a one-token KV length, give the same key). Needs `p.graph`.
std::string tiling_key(Plan& p);

/// Creates the buffers and one PlanTask per tile/shard of every node of `p.graph`.
void tile(Plan& p);

}  // namespace amk::lower
