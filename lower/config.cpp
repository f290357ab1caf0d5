#include "lower/config.h"

#include <algorithm>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/schema.h"

namespace amk::lower {

using json = nlohmann::ordered_json;

namespace {

bool positive_int(const json& v) {
  return v.is_number_integer() && v.get<int64_t>() > 0;
}

// "must be <the field's domain>", as the schema (ir/schema.h) states it.
std::string must_be(std::string_view field) {
  return fmt::format("must be {}", ir::find_field(ir::config_fields(), field)->domain);
}

}  // namespace

ir::ScheduleConfig default_config() {
  ir::ScheduleConfig c = ir::ScheduleConfig::defaults();
  c.tiling = ir::JsonValue(json{{"gemv", {{"N_tile", 64}}}, {"attention", {{"kv_block", 128}}}});
  return c;
}

ir::Result<ir::ScheduleConfig> parse_config(std::string_view text, std::string_view origin) {
  ir::Result<ir::ScheduleConfig> c = ir::parse_config(text, /*strict=*/true);
  ir::set_file(c.diagnostics, origin);
  return c;
}

namespace {

// A config.invalid error at /config`ptr`.
ir::Diagnostic invalid(std::string_view ptr, std::string_view what) {
  return ir::error("config.invalid", std::string(what), fmt::format("/config{}", ptr));
}

// tiling: {gemv: {N_tile, base_width}, attention: {n_partitions, kv_block}}.
ir::Status read_tiling(const ir::ScheduleConfig* cfg, Knobs& k) {
  const json& tiling = cfg->tiling.json();
  if (!tiling.is_null() && !tiling.is_object()) return invalid("/tiling", "must be an object");
  if (tiling.is_object()) {
    for (auto it = tiling.begin(); it != tiling.end(); ++it) {
      const std::string& arch = it.key();
      if (arch != "gemv" && arch != "attention")
        return invalid("/tiling/" + arch, "unknown op archetype (known: gemv, attention)");
      if (!it.value().is_object()) return invalid("/tiling/" + arch, "must be an object");
      for (auto kv = it.value().begin(); kv != it.value().end(); ++kv) {
        const std::string ptr = fmt::format("/tiling/{}/{}", arch, kv.key());
        std::optional<int64_t>* slot = nullptr;
        if (arch == "gemv" && kv.key() == "N_tile") slot = &k.n_tile;
        if (arch == "gemv" && kv.key() == "base_width") slot = &k.base_width;
        if (arch == "attention" && kv.key() == "n_partitions") slot = &k.n_partitions;
        if (arch == "attention" && kv.key() == "kv_block") slot = &k.kv_block;
        if (!slot)
          return invalid(ptr, arch == "gemv"
                                  ? "unknown gemv knob (known: N_tile, base_width)"
                                  : "unknown attention knob (known: n_partitions, kv_block)");
        if (!positive_int(kv.value())) return invalid(ptr, "must be a positive integer");
        *slot = kv.value().get<int64_t>();
      }
    }
  }
  return {};
}

// fusion_grouping: groups of at least two op names.
ir::Status read_fusion(const ir::ScheduleConfig* cfg, Knobs& k) {
  const json& fusion = cfg->fusion_grouping.json();
  if (!fusion.is_null()) {
    if (!fusion.is_array()) return invalid("/fusion_grouping", must_be("fusion_grouping"));
    for (size_t g = 0; g < fusion.size(); ++g) {
      const json& grp = fusion[g];
      if (!grp.is_array() || grp.size() < 2)
        return invalid(fmt::format("/fusion_grouping/{}", g),
                       "a group lists at least two op names");
      std::vector<std::string> names;
      for (size_t i = 0; i < grp.size(); ++i) {
        if (!grp[i].is_string())
          return invalid(fmt::format("/fusion_grouping/{}/{}", g, i), "must be an op name string");
        names.push_back(grp[i].get<std::string>());
      }
      k.fusion.push_back(std::move(names));
    }
  }
  return {};
}

// sm_assignment: load_balance, round_robin or {task: SM} within the target.
ir::Status read_sm(const ir::ScheduleConfig* cfg, const targets::TargetSpec& t, Knobs& k) {
  const json& sm = cfg->sm_assignment.json();
  const int64_t sms = t.num_workers();
  if (sm.is_null() || sm == "load_balance") {
    k.sm = Knobs::Sm::LoadBalance;
  } else if (sm == "round_robin") {
    k.sm = Knobs::Sm::RoundRobin;
  } else if (sm.is_object()) {
    k.sm = Knobs::Sm::Explicit;
    for (auto it = sm.begin(); it != sm.end(); ++it) {
      const std::string ptr = "/sm_assignment/" + ir::pointer_token(it.key());
      int64_t task = -1;
      try {
        size_t used = 0;
        task = std::stoll(it.key(), &used);
        if (used != it.key().size()) task = -1;
      } catch (const std::exception&) {
        task = -1;
      }
      if (task < 0) return invalid(ptr, "keys must be task ids (non-negative integers)");
      if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
          it.value().get<int64_t>() >= sms)
        return invalid(
            ptr, fmt::format("must be an SM index in [0, {}) of target {}", sms, t.record.name));
      k.sm_map.emplace_back(task, it.value().get<int64_t>());
    }
  } else {
    return invalid("/sm_assignment", must_be("sm_assignment"));
  }
  return {};
}

// pipelining_depth and page_allocation.
ir::Status read_schedule(const ir::ScheduleConfig* cfg, Knobs& k) {
  const json& depth = cfg->pipelining_depth.json();
  if (!depth.is_null()) {
    if (!depth.is_number_integer() || depth.get<int64_t>() < 0 || depth.get<int64_t>() > 16)
      return invalid("/pipelining_depth", must_be("pipelining_depth"));
  }
  k.depth = cfg->depth();
  const json& pages = cfg->page_allocation.json();
  if (pages.is_null() || pages == "graph_color") {
    k.pages = Knobs::Pages::GraphColor;
  } else if (pages == "linear") {
    k.pages = Knobs::Pages::Linear;
  } else if (pages == "none") {
    k.pages = Knobs::Pages::None;
  } else {
    return invalid("/page_allocation", must_be("page_allocation"));
  }
  return {};
}

// threads_per_block and smem_bytes_per_block, within what the target allows.
ir::Status read_block(const ir::ScheduleConfig* cfg, const targets::TargetSpec& t, Knobs& k) {
  const json& tpb = cfg->threads_per_block.json();
  if (!tpb.is_null()) {
    const int64_t max_thr = t.record.max_threads_per_sm.is_int ? t.record.max_threads_per_sm.i : 0;
    if (!tpb.is_number_integer() || tpb.get<int64_t>() < 32 || tpb.get<int64_t>() > 1024 ||
        tpb.get<int64_t>() % 32 != 0)
      return invalid("/threads_per_block", must_be("threads_per_block"));
    if (max_thr > 1 && tpb.get<int64_t>() > max_thr)
      return invalid("/threads_per_block",
                     fmt::format("{} exceeds target {}'s max_threads_per_sm {}", tpb.get<int64_t>(),
                                 t.record.name, max_thr));
    k.threads = tpb.get<int64_t>();
  }
  const json& smem = cfg->smem_bytes_per_block.json();
  if (!smem.is_null()) {
    const int64_t optin = t.record.smem_bytes_per_block_optin.is_int
                              ? t.record.smem_bytes_per_block_optin.i
                              : static_cast<int64_t>(t.record.smem_bytes_per_block_optin.f);
    if (!smem.is_number_integer() || smem.get<int64_t>() < 0)
      return invalid("/smem_bytes_per_block", must_be("smem_bytes_per_block"));
    if (smem.get<int64_t>() > optin)
      return invalid("/smem_bytes_per_block",
                     fmt::format("{} exceeds target {}'s smem_bytes_per_block_optin {}",
                                 smem.get<int64_t>(), t.record.name, optin));
    k.smem = smem.get<int64_t>();
  }
  return {};
}

}  // namespace

ir::Result<Knobs> parse_knobs(const std::optional<ir::ScheduleConfig>& cfg,
                              const targets::TargetSpec& t) {
  Knobs k;
  if (!cfg) {
    k.base_width = 32;  // AMK: config None tiles by min(max(16, 32), N)
    return k;
  }
  const ir::ScheduleConfig* c = &*cfg;
  for (ir::Status st : {read_tiling(c, k), read_fusion(c, k), read_sm(c, t, k), read_schedule(c, k),
                        read_block(c, t, k)})
    if (!st) return std::move(st.diagnostics);
  return k;
}

bool is_inline_json(std::string_view arg) {
  const size_t i = arg.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && arg[i] == '{';
}

std::string config_origin(std::string_view arg, std::string_view inline_origin) {
  return std::string(is_inline_json(arg) ? inline_origin : arg);
}

ir::Result<std::optional<ir::ScheduleConfig>> resolve_config(std::string_view arg,
                                                             std::string_view inline_origin) {
  using R = ir::Result<std::optional<ir::ScheduleConfig>>;
  if (arg == "auto") return R(std::optional<ir::ScheduleConfig>());
  const bool inline_json = is_inline_json(arg);
  std::string text(arg);
  if (!inline_json) {
    ir::Result<std::string> file = ir::read_file(text);
    if (!file) return std::move(file.diagnostics);
    text = std::move(*file);
  }
  ir::Result<ir::ScheduleConfig> c = parse_config(text, config_origin(arg, inline_origin));
  if (!c) return std::move(c.diagnostics);
  R r(std::optional<ir::ScheduleConfig>(std::move(*c.value)));
  r.diagnostics = std::move(c.diagnostics);
  return r;
}

}  // namespace amk::lower
