// ScheduleConfig -> Knobs: every field parsed, typed and checked against the target.
#pragma once

#include <optional>
#include <string>

#include "ir/program.h"
#include "lower/plan.h"
#include "targets/target.h"

namespace amk::lower {

/// Parses `cfg` (nullopt: AMK's "auto" point, tiling only by base width) for `t`. Errors name a
/// JSON pointer under /config.
std::optional<Knobs> parse_knobs(const std::optional<ir::ScheduleConfig>& cfg,
                                 const targets::TargetSpec& t, std::string& error);
/// AMK's default_config (N_tile 64, kv_block 128, load_balance, depth 2, graph_color, 256, 0).
ir::ScheduleConfig default_config();
/// Parses a ScheduleConfig JSON document (a file's text); errors name `origin`.
std::optional<ir::ScheduleConfig> parse_config(std::string_view text, std::string_view origin,
                                               std::string& error);

}  // namespace amk::lower
