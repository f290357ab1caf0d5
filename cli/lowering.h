// Options shared by the commands that lower a model (lower, generate, gen-weights, search).
#pragma once

#include <optional>
#include <string>

#include "cli/cli.h"
#include "ir/result.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "targets/target.h"

namespace amk::cli {

/// --target, --config, --dtype, --quant, --group, --batch, --amk-compat, resolved.
struct LoweringArgs {
  lower::ModelSpec model;
  targets::TargetSpec target;
  std::optional<ir::ScheduleConfig> config;
  std::string config_origin;  ///< the config file (or "--config") that config diagnostics name
  lower::LowerOptions opt;
};

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
