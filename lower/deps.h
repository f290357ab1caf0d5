// Pass 3, dependencies: the tasks' read/write regions through ir::TensorMap, so every consumer
// follows exactly the producers it overlaps.
#pragma once

#include "ir/tensor_map.h"
#include "lower/plan.h"

namespace amk::lower {

using ir::TensorMap;

/// Pass 3, dependencies: fills p.deps from the tasks' regions with a TensorMap.
void derive_dependencies(Plan& p);

}  // namespace amk::lower
