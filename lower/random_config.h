// Seeded random ScheduleConfigs over every knob (AMK's random_config, widened), for property
// tests, benchmarks and search loops. Every config it returns lowers without a config error.
#pragma once

#include <cstdint>

#include "ir/program.h"
#include "lower/model.h"
#include "targets/target.h"

namespace amk::lower {

/// A random valid config for `m` on `t` (tiling, split-KV, kv_block, fusion presets that fit the
/// tiling, round_robin/load_balance/explicit maps, depth, pages, threads, smem); deterministic.
ir::ScheduleConfig random_config(uint64_t seed, const ModelSpec& m, const targets::TargetSpec& t);

}  // namespace amk::lower
