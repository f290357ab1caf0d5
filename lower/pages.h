// Pass 5, allocate pages: activation buffers -> scratch pages. linear: one page each;
// graph_color: a page is reused once every access of its occupants happens-before the new
// buffer's writers (live ranges from the schedule's dependency order, best-fit reuse); none.
#pragma once

#include "ir/result.h"
#include "lower/plan.h"

namespace amk::lower {

/// Fills p.program.pages; returns an error when the pages exceed the target's scratch.
ir::Status allocate_pages(Plan& p);

}  // namespace amk::lower
