// model + target + ScheduleConfig -> a validated program: tile, fuse, dependencies, assign
// workers, allocate pages, emit; each pass one function, logged and timed on request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "lower/model.h"
#include "lower/plan.h"
#include "targets/target.h"

namespace amk::lower {

/// The lowered program, or the error that stopped it (a user mistake: bad config or model).
struct LowerResult {
  std::optional<ir::Program> program;
  std::string error;             ///< names a JSON pointer under /config when the config is bad
  std::vector<std::string> log;  ///< one line per pass when LowerOptions::log
  double seconds = 0;            ///< wall time of all passes
};

/// Lowers one decode step of `m` for `t` under `cfg` (nullopt: AMK's config-less "auto" point).
/// The result is not validated; callers run the validator (amk lower does).
LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt);

}  // namespace amk::lower
