#include "search/space.h"

#include <algorithm>
#include <array>
#include <span>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/assert.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "ir/schema.h"
#include "lower/config.h"
#include "lower/lower.h"

std::span<const std::pair<std::string_view, std::string_view>> amk_builtin_space_files();

namespace amk::search {

using json = nlohmann::ordered_json;

namespace {

// The knobs a space may vary, in AMK's field order: a path through the config's JSON.
constexpr std::array<std::string_view, 10> kKnobs = {
    "tiling.gemv.N_tile",        "tiling.gemv.base_width", "tiling.attention.n_partitions",
    "tiling.attention.kv_block", "fusion_grouping",        "sm_assignment",
    "page_allocation",           "pipelining_depth",       "threads_per_block",
    "smem_bytes_per_block"};

// The ScheduleConfig field a knob path starts with ("tiling.gemv.N_tile": tiling).
ir::JsonValue& field(ir::ScheduleConfig& c, std::string_view path) {
  const ir::Field<ir::ScheduleConfig>* f =
      ir::find_field(ir::config_fields(), path.substr(0, path.find('.')));
  AMK_ASSERT(f, "a knob path starts with a ScheduleConfig field");
  return c.*std::get<ir::JsonValue ir::ScheduleConfig::*>(f->member);
}

// Sets (or, for null, removes) a knob's value in a config.
void set(ir::ScheduleConfig& c, std::string_view path, const json& v) {
  ir::JsonValue& f = field(c, path);
  if (!path.starts_with("tiling.")) {
    f = ir::JsonValue(v);
    return;
  }
  const size_t dot = path.find('.', 7);
  const std::string arch(path.substr(7, dot - 7)), key(path.substr(dot + 1));
  json& tiling = f.mut();
  if (!tiling.is_object()) tiling = json::object();
  if (v.is_null()) {
    if (tiling.contains(arch)) {
      tiling[arch].erase(key);
      if (tiling[arch].empty()) tiling.erase(arch);
    }
    return;
  }
  tiling[arch][key] = v;
}

// A knob's value in a config (null when absent).
json get(const ir::ScheduleConfig& c, std::string_view path) {
  const json& f = field(const_cast<ir::ScheduleConfig&>(c), path).json();
  if (!path.starts_with("tiling.")) return f;
  const size_t dot = path.find('.', 7);
  const std::string arch(path.substr(7, dot - 7)), key(path.substr(dot + 1));
  if (f.is_object() && f.contains(arch) && f[arch].is_object() && f[arch].contains(key))
    return f[arch][key];
  return nullptr;
}

}  // namespace

std::string_view default_space_text() {
  return amk_builtin_space_files()[0].second;
}

ir::ScheduleConfig Space::config(const Point& pt, const ir::ScheduleConfig& base) const {
  ir::ScheduleConfig c = base;
  for (size_t k = 0; k < knobs.size(); ++k) set(c, knobs[k].path, knobs[k].values[pt[k]].json());
  // The lowering reads base_width only without an N_tile, and kv_block only without
  // n_partitions: leave them out then, so equal programs have equal configs.
  if (!get(c, "tiling.gemv.N_tile").is_null()) set(c, "tiling.gemv.base_width", nullptr);
  if (!get(c, "tiling.attention.n_partitions").is_null())
    set(c, "tiling.attention.kv_block", nullptr);
  return c;
}

Point Space::point_of(const ir::ScheduleConfig& c) {
  Point pt(knobs.size());
  for (size_t k = 0; k < knobs.size(); ++k) {
    const json v = get(c, knobs[k].path);
    auto it = std::find_if(knobs[k].values.begin(), knobs[k].values.end(),
                           [&](const ir::JsonValue& x) { return x.json() == v; });
    if (it == knobs[k].values.end()) {
      knobs[k].values.push_back(ir::JsonValue(v));
      knobs[k].labels.push_back(ir::dump_text(v));
      it = knobs[k].values.end() - 1;
    }
    pt[k] = static_cast<uint16_t>(it - knobs[k].values.begin());
  }
  return pt;
}

double Space::size() const {
  double n = 1;
  for (const Knob& k : knobs) n *= static_cast<double>(k.values.size());
  return n;
}

namespace {

// A space error at `pointer`.
ir::Diagnostic space_error(std::string msg, std::string pointer) {
  return ir::error("space.invalid", std::move(msg), std::move(pointer));
}

// Diagnostics about the space file `origin`.
ir::Diagnostics with_file(ir::Diagnostics d, std::string_view origin) {
  ir::set_file(d, origin);
  return d;
}

// A knob's domain: named presets (fusion_grouping) or a non-empty list of values.
ir::Status read_domain(const json& dom, const std::string& ptr, Knob& k) {
  if (k.path == "fusion_grouping") {
    if (!dom.is_object() || dom.empty())
      return space_error("must be an object of named presets (lists of op-name groups)", ptr);
    for (auto p = dom.begin(); p != dom.end(); ++p) {
      k.values.push_back(ir::JsonValue(p.value()));
      k.labels.push_back(p.key());
    }
    return {};
  }
  if (!dom.is_array() || dom.empty()) return space_error("must be a non-empty list of values", ptr);
  for (const json& v : dom) {
    k.values.push_back(ir::JsonValue(v));
    k.labels.push_back(ir::dump_text(v));
  }
  return {};
}

// One bound's value: a numeric target field ("max_threads_per_sm") or a runtime's
// ("runtime.max_threads_per_block"), or nullopt when `name` is neither.
std::optional<double> bound_value(std::string_view name, const targets::TargetSpec& t,
                                  const targets::Runtime& rt) {
  if (!name.starts_with("runtime.")) return ir::target_number(t.record, name);
  for (const targets::RuntimeField& f : targets::runtime_fields())
    if (f.number && f.key == name.substr(8)) return rt.*f.number;
  return std::nullopt;
}

// The bound "bounds" sets on knob `path`: the least of the fields it names (one or a list; a
// field of 0 or 1 sets none), or nullopt for none.
ir::Result<std::optional<double>> read_bound(const json& bounds, const std::string& path,
                                             const targets::TargetSpec& t,
                                             const targets::Runtime& rt) {
  if (!bounds.contains(path)) return std::optional<double>();
  const json& b = bounds[path];
  const json names = b.is_array() ? b : json::array({b});
  std::optional<double> least;
  for (const json& n : names) {
    const std::optional<double> v =
        n.is_string() ? bound_value(n.get<std::string>(), t, rt) : std::nullopt;
    if (!v)
      return space_error(
          "must name numeric target or runtime fields (max_threads_per_sm, "
          "runtime.max_threads_per_block, ...), one or a list",
          "/bounds/" + ir::pointer_token(path));
    if (*v > 1 && (!least || *v < *least)) least = *v;
  }
  return least;
}

}  // namespace

ir::Result<Space> parse_space(std::string_view text, std::string_view origin,
                              const lower::ModelSpec& m, const targets::TargetSpec& t,
                              const ir::ScheduleConfig& base, const targets::Runtime* runtime) {
  const targets::Runtime& rt = runtime ? *runtime : targets::default_runtime(t);
  auto fail = [&](std::string msg, std::string pointer) {
    ir::Diagnostic d = ir::error("space.invalid", std::move(msg), std::move(pointer));
    d.file = origin;
    return ir::Result<Space>(std::move(d));
  };
  ir::Result<ir::JsonValue> doc = ir::parse_json_object(text, "a search space");
  if (!doc) {
    ir::set_file(doc.diagnostics, origin);
    return std::move(doc.diagnostics);
  }
  const json& j = doc->json();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "knobs" && it.key() != "bounds" && it.key() != "note")
      return fail("unknown field (known: knobs, bounds, note)", "/" + ir::pointer_token(it.key()));
  if (!j.contains("knobs") || !j["knobs"].is_object() || j["knobs"].empty())
    return fail("must be an object of knob paths and their domains", "/knobs");
  const json bounds = j.contains("bounds") ? j["bounds"] : json::object();
  if (!bounds.is_object()) return fail("must be an object {knob: field or [fields]}", "/bounds");
  Space s;
  const json& knobs = j["knobs"];
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string ptr = "/knobs/" + ir::pointer_token(it.key());
    if (std::find(kKnobs.begin(), kKnobs.end(), it.key()) == kKnobs.end())
      return fail(fmt::format("unknown knob (known: {})", fmt::join(kKnobs, ", ")), ptr);
    Knob k;
    k.path = it.key();
    const json& dom = it.value();
    if (ir::Status st = read_domain(dom, ptr, k); !st)
      return with_file(std::move(st.diagnostics), origin);
    // Every value must be one the lowering accepts for this target; values above a bound (the
    // target's, or the runtime's launch) are dropped.
    ir::Result<std::optional<double>> bound = read_bound(bounds, k.path, t, rt);
    if (!bound) return with_file(std::move(bound.diagnostics), origin);
    Knob kept{k.path, {}, {}};
    std::string dropped;  // why the first preset dropped was dropped
    for (size_t i = 0; i < k.values.size(); ++i) {
      const json& v = k.values[i].json();
      if (*bound && v.is_number() && v.get<double>() > **bound) continue;
      ir::ScheduleConfig c = base;
      set(c, k.path, v);
      if (k.path == "fusion_grouping") {
        // A preset is legal for the model when some tiling of the space fuses it: try the
        // coarsest N_tile (a whole-projection tile lets down_proj fuse) without split-KV.
        set(c, "tiling.gemv.N_tile", 1 << 20);
        set(c, "tiling.attention.n_partitions", nullptr);
        set(c, "tiling.attention.kv_block", nullptr);
        if (lower::LowerResult lr = lower::lower(m, t, c, {}); !lr) {
          if (dropped.empty())
            dropped =
                fmt::format(" (preset {}: {})", k.labels[i], ir::error_messages(lr.diagnostics));
          continue;
        }
      } else if (ir::Result<lower::Knobs> ok = lower::parse_knobs(c, t); !ok) {
        const std::string vptr = dom.is_object() ? ptr + "/" + ir::pointer_token(k.labels[i])
                                                 : ptr + "/" + std::to_string(i);
        return fail(fmt::format("value {} is not one the lowering accepts: {}", ir::dump_text(v),
                                ir::error_messages(ok.diagnostics)),
                    vptr);
      }
      // A value the runtime cannot run (runtime_limits warns at its field) is left out.
      const std::string field = "/" + k.path.substr(0, k.path.find('.'));
      const ir::Diagnostics limits = targets::runtime_limits(rt, c);
      const auto limit = std::find_if(limits.begin(), limits.end(),
                                      [&](const ir::Diagnostic& d) { return d.pointer == field; });
      if (limit != limits.end()) {
        if (dropped.empty()) dropped = fmt::format(" (value {}: {})", k.labels[i], limit->message);
        continue;
      }
      kept.values.push_back(k.values[i]);
      kept.labels.push_back(k.labels[i]);
    }
    if (kept.values.empty())
      return fail(fmt::format("no value of this knob fits target {} and model {}{}", t.record.name,
                              m.name, dropped),
                  ptr);
    s.knobs.push_back(std::move(kept));
  }
  for (auto it = bounds.begin(); it != bounds.end(); ++it)
    if (!knobs.contains(it.key()))
      return fail("bounds a knob the space does not have",
                  "/bounds/" + ir::pointer_token(it.key()));
  ir::Result<Space> r(std::move(s));
  r.diagnostics = std::move(doc.diagnostics);
  ir::set_file(r.diagnostics, origin);
  return r;
}

ir::Result<Space> default_space(const lower::ModelSpec& m, const targets::TargetSpec& t,
                                const ir::ScheduleConfig& base, const targets::Runtime* runtime) {
  return parse_space(default_space_text(), "schedules/space.json", m, t, base, runtime);
}

}  // namespace amk::search
