// The search space as data (schedules/space.json, or a file of the same shape): every
// ScheduleConfig knob a search varies and its domain, bounded by the target record, with the
// fusion presets the model can fuse; points, their configs and the configs' canonical keys.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_io.h"
#include "ir/json_value.h"
#include "ir/program.h"
#include "ir/result.h"
#include "lower/model.h"
#include "targets/runtime.h"
#include "targets/target.h"

namespace amk::search {

/// One knob: where it sits in a ScheduleConfig and the values it takes.
struct Knob {
  std::string path;                   ///< "tiling.gemv.N_tile", "fusion_grouping", ...
  std::vector<ir::JsonValue> values;  ///< JSON values; null leaves the knob out of the config
  std::vector<std::string> labels;    ///< each value's name (a preset's, else its JSON text)
};

/// A point of a space: one value index per knob.
using Point = std::vector<uint16_t>;

/// The knobs of a search for one model and target.
struct Space {
  std::vector<Knob> knobs;
  /// The config of a point: `base` with every knob set (a null value removes it), canonical: a
  /// knob the lowering ignores (base_width beside an N_tile, kv_block beside n_partitions) is
  /// left out, so equal programs have equal configs.
  ir::ScheduleConfig config(const Point& pt, const ir::ScheduleConfig& base) const;
  /// The point of a config, adding a value the config has and a domain lacks (a --start config
  /// outside the space) to that domain.
  Point point_of(const ir::ScheduleConfig& c);
  /// The number of points (a double: spaces get large).
  double size() const;
};

/// Parses a space file for `m` on `t` under `runtime` (null: the target's): unknown knobs, empty
/// domains and values the lowering refuses are errors with a JSON pointer (and a line:column for
/// syntax); values above the bounds (the target's and the runtime's fields) and fusion presets no
/// tiling of the model can fuse are dropped. `base` is the config the knobs are set on.
ir::Result<Space> parse_space(std::string_view text, std::string_view origin,
                              const lower::ModelSpec& m, const targets::TargetSpec& t,
                              const ir::ScheduleConfig& base,
                              const targets::Runtime* runtime = nullptr);
/// The built-in space (schedules/space.json) for `m` on `t` under `runtime` (null: the target's).
ir::Result<Space> default_space(const lower::ModelSpec& m, const targets::TargetSpec& t,
                                const ir::ScheduleConfig& base,
                                const targets::Runtime* runtime = nullptr);
/// The built-in space file's text.
std::string_view default_space_text();

/// A config's canonical text and its hash (ir's, re-exported: a search's identity of a config).
using ir::config_hash;
using ir::config_key;

}  // namespace amk::search
