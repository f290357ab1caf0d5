// Internal: the AICore-mode executor (see Mode::Aicore in vm.h).
#pragma once

#include <span>

#include "vm/image.h"
#include "vm/options.h"
#include "vm/run_result.h"

namespace amk::vm {

/// The core type of an opcode whose FUSED recipe (if any) is already parsed (see core_type_of).
CoreType core_type_of(ir::Op op, const ir::Recipe* recipe, std::span<const ir::Op> aic_ops);
/// Runs one launch of a wired image in AICore mode.
RunResult run_aicore(Image& im, const RunOptions& o);

}  // namespace amk::vm
