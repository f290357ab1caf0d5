// ScheduleConfig -> Knobs: every field parsed, typed and checked against the target.
#pragma once

#include <optional>
#include <string_view>

#include "ir/program.h"
#include "ir/result.h"
#include "lower/plan.h"
#include "targets/target.h"

namespace amk::lower {

/// Parses `cfg` (nullopt: AMK's "auto" point, tiling only by base width) for `t`. Errors
/// (`config.invalid`) name a JSON pointer under /config.
ir::Result<Knobs> parse_knobs(const std::optional<ir::ScheduleConfig>& cfg,
                              const targets::TargetSpec& t);
/// AMK's default_config (N_tile 64, kv_block 128, load_balance, depth 2, graph_color, 256, 0).
ir::ScheduleConfig default_config();
/// Parses a ScheduleConfig JSON document (a file's text, read by the program reader: unknown
/// fields are errors); diagnostics name `origin`, a pointer and a line:column.
ir::Result<ir::ScheduleConfig> parse_config(std::string_view text, std::string_view origin);
/// A config argument as users give one: "auto" (AMK's config-less point: nullopt), inline JSON
/// (starting with '{'; diagnostics name `inline_origin`, e.g. "--config") or a ScheduleConfig
/// file (diagnostics name the file).
ir::Result<std::optional<ir::ScheduleConfig>> resolve_config(std::string_view arg,
                                                             std::string_view inline_origin);
/// Whether a config argument is inline JSON (starts with '{') rather than a file name.
bool is_inline_json(std::string_view arg);
/// What diagnostics about a config argument name: `inline_origin` for inline JSON, else the file.
std::string config_origin(std::string_view arg, std::string_view inline_origin);

}  // namespace amk::lower
