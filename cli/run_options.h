// VM execution options shared by `amk run` and `amk generate` (--workers, --mode, --seed,
// --watchdog-ms and the AICore set-up).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "ir/result.h"
#include "targets/target.h"
#include "vm/vm.h"

namespace amk::cli {

/// Declares --workers, --mode, --seed, --watchdog-ms, --schedulers, --core-threads, --core-type.
void add_run_options(Args& args);
/// Resolves them; `target` (may be null) gives the AICore topology and makes aicore the default
/// mode when it has clusters. A `usage.option` error on a bad value; a note (warning) when an
/// option is ignored.
ir::Status resolve_run_options(const Args& args, const targets::TargetSpec* target,
                               vm::RunOptions& ro);
/// Token ids written "1,2,3" (--prompt-ids, --token-id): non-negative int32s; nullopt if not.
std::optional<std::vector<int32_t>> parse_token_ids(const std::string& s);

}  // namespace amk::cli
