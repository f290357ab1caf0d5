// Lower, prove, predict: the one path from a model and a ScheduleConfig to a program every front
// end (amk lower, generate, search, serve, the Python module) hands to its users.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/lower.h"
#include "targets/cost.h"
#include "targets/target.h"
#include "validate/validate.h"

namespace amk::lower {

/// A lowered program the validator proved, with its verdict (warnings) and its prediction.
struct Compiled {
  ir::Program program;
  validate::Result verdict;      ///< ok; its warnings still matter
  targets::CostEstimate cost;    ///< on the lowering's target
  std::vector<std::string> log;  ///< one line per pass when LowerOptions::log
  double lower_s = 0;            ///< wall time of the passes
};

/// Lowers (lower()), validates (with `v`, or a thread-local Validator) and predicts. A program the
/// validator rejects is a `lower.rejected` error followed by the validator's errors; nothing
/// unproven is ever returned. On failure, `log` (when asked for) is in `log_out`.
ir::Result<Compiled> compile(const ModelSpec& m, const targets::TargetSpec& t,
                             const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt,
                             validate::Validator* v = nullptr,
                             std::vector<std::string>* log_out = nullptr);

}  // namespace amk::lower
