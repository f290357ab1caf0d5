// Pass 2, fuse: each fusion_grouping group of adjacent single-task ops becomes one FUSED task
// with an AMK recipe (intermediates in scratch; an intermediate read outside the group keeps its
// own task and is recomputed inside the FUSED one).
#pragma once

#include "ir/result.h"
#include "lower/plan.h"

namespace amk::lower {

/// Applies p.knobs.fusion; returns an error naming the group when one cannot be fused.
ir::Status fuse(Plan& p);

}  // namespace amk::lower
