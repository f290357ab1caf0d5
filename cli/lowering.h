// Options shared by the commands that lower a model (lower, generate, gen-weights, info).
#pragma once

#include <optional>
#include <string>

#include "cli/cli.h"
#include "lower/lower.h"
#include "lower/model.h"
#include "targets/target.h"

namespace amk::cli {

/// --target, --config, --dtype, --quant, --group, --batch, --amk-compat, resolved.
struct LoweringArgs {
  lower::ModelSpec model;
  targets::TargetSpec target;
  std::optional<ir::ScheduleConfig> config;
  lower::LowerOptions opt;
};

/// Declares the shared options on `args` (`with_target`: --target is required).
void add_lowering_options(Args& args, bool need_target);
/// Resolves them for model `model_arg`; prints "amk CMD: error" and returns nullopt on failure.
std::optional<LoweringArgs> resolve_lowering(const Args& args, std::string_view cmd,
                                             const std::string& model_arg);
/// Loads a target by name or path; prints the error and returns nullopt on failure.
std::optional<targets::TargetSpec> resolve_target(std::string_view cmd, const std::string& name);

}  // namespace amk::cli
