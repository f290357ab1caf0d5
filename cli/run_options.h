// VM execution options shared by `amk run` and `amk generate` (--workers, --mode, --seed,
// --watchdog-ms and the AICore set-up).
#pragma once

#include <string_view>

#include "cli/cli.h"
#include "targets/target.h"
#include "vm/vm.h"

namespace amk::cli {

/// Declares --workers, --mode, --seed, --watchdog-ms, --schedulers, --core-threads, --core-type.
void add_run_options(Args& args);
/// Resolves them; `target` (may be null) gives the AICore topology and makes aicore the default
/// mode when it has clusters. Prints "amk CMD: error" and returns false on a bad value.
bool resolve_run_options(const Args& args, std::string_view cmd, const targets::TargetSpec* target,
                         vm::RunOptions& ro);

}  // namespace amk::cli
