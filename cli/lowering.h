// Options shared by the commands that lower a model (lower, generate, gen-weights, search).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli/cli.h"
#include "ir/result.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::cli {

/// --target, --config, --dtype, --quant, --group, --batch, --amk-compat, resolved.
struct LoweringArgs {
  lower::ModelSpec model;
  targets::TargetSpec target;
  std::optional<ir::ScheduleConfig> config;
  std::string config_origin;  ///< the config file (or "--config") that config diagnostics name
  lower::LowerOptions opt;
  std::shared_ptr<const targets::Runtime> runtime;  ///< --runtime (opt.runtime points at it)
};

/// Declares --runtime NAME|FILE: the executor predictions are for (default: the target's).
void add_runtime_option(Args& args);
/// The --runtime given, or nullptr without one (the target's default runtime applies).
ir::Result<std::shared_ptr<const targets::Runtime>> resolve_runtime_option(const Args& args);

/// Declares --target (default h100): what a model is lowered for and a program proven and run on.
void add_target_option(Args& args);
/// Whether --target was given (not its default).
bool target_given(const Args& args);
/// Declares the shared options on `args` (add_target_option's --target among them).
void add_lowering_options(Args& args);
/// Declares --dtype, --quant, --group and --batch (the LowerOptions a command sets).
void add_lower_options(Args& args);
/// Those options resolved (a bad --dtype or --quant is a `usage.option` error).
ir::Result<lower::LowerOptions> resolve_lower_options(const Args& args);
/// Resolves the shared options for `model`.
ir::Result<LoweringArgs> resolve_lowering(const Args& args, lower::ModelSpec model);
/// Names the config's origin on the diagnostics about it (config.*).
void name_config(ir::Diagnostics& d, const LoweringArgs& la);

}  // namespace amk::cli
