// The machine a program runs on, as `run` and `generate` (and the Python module) choose it: the
// target's worker topology (SMs, or AICore clusters and AICPU scheduler threads), the execution
// mode and the VM's load defaults, in one place.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "ir/program.h"
#include "ir/result.h"
#include "targets/target.h"
#include "vm/vm.h"

namespace amk::app {

/// The execution modes by name: sm, sm-threads, deterministic, aicore, aicore-deterministic.
inline constexpr std::string_view kModes =
    "sm, sm-threads, deterministic, aicore or aicore-deterministic";

/// The built-in target a program's embedded record names (for its worker topology), if any.
std::optional<targets::TargetSpec> builtin_target_of(const ir::Program& p);
/// Sets `ro.mode` (and, for AICore modes, the cluster topology, scheduler threads and per-opcode
/// core types of `t`) from
/// a mode name; empty: aicore on a target with clusters, else sm. A `usage.option` error names
/// the modes when the name is unknown.
ir::Status set_mode(std::string_view mode, const targets::TargetSpec* t, vm::RunOptions& ro);
/// The VM's load options for a run with `workers` OS threads (0: the hardware threads): a program
/// without a target gets one SM per worker.
vm::LoadOptions load_options(int workers);
/// The OS threads a run uses: `workers`, or the hardware threads when 0.
int worker_threads(int workers);

}  // namespace amk::app
