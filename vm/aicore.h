// Internal: the AICore-mode executor (see Mode::Aicore in vm.h).
#pragma once

#include "vm/image.h"
#include "vm/vm.h"

namespace amk::vm {

/// Runs one launch of a wired image in AICore mode.
RunResult run_aicore(Image& im, const RunOptions& o);

}  // namespace amk::vm
