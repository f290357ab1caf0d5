// model + target + ScheduleConfig -> a program: tile, fuse, dependencies, assign workers,
// allocate pages, emit; each pass one function, logged and timed on request.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/model.h"
#include "lower/plan.h"
#include "targets/target.h"

namespace amk::lower {

/// The lowered program, or the errors that stopped it (a user mistake: a bad config, pointer
/// under /config, or model), with the passes' log.
struct LowerResult : ir::Result<ir::Program> {
  std::vector<std::string> log;  ///< one line per pass when LowerOptions::log
  double seconds = 0;            ///< wall time of all passes
};

/// Lowers one decode step of `m` for `t` under `cfg` (nullopt: AMK's config-less "auto" point).
/// These are the passes only; compile() (compile.h) also proves and predicts the program.
LowerResult lower(const ModelSpec& m, const targets::TargetSpec& t,
                  const std::optional<ir::ScheduleConfig>& cfg, const LowerOptions& opt);

}  // namespace amk::lower
