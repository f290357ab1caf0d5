#include "targets/target.h"

#include <algorithm>
#include <span>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "targets/runtime.h"

std::span<const std::pair<std::string_view, std::string_view>> amk_builtin_target_files();

namespace amk::targets {

using json = nlohmann::ordered_json;

int64_t TargetSpec::num_workers() const {
  int64_t n = 0;
  for (const WorkerKind& w : workers) n += w.count;
  return n;
}

int64_t TargetSpec::count_of(std::string_view kind) const {
  for (const WorkerKind& w : workers)
    if (w.kind == kind) return w.count;
  return 0;
}

namespace {

// Reads the "amk" extension object; false with `error` set on the first problem.
bool read_extension(const json& a, TargetSpec& t, ir::Diagnostic& error) {
  auto fail = [&](std::string_view ptr, std::string_view what) {
    error = ir::error("target.field", std::string(what), fmt::format("/amk{}", ptr));
    return false;
  };
  if (!a.is_object()) return fail("", "must be an object");
  auto int_at = [&](const char* key, int64_t& out, int64_t min) {
    if (!a.contains(key)) return true;
    const json& v = a[key];
    if (!v.is_number_integer() || v.get<int64_t>() < min)
      return fail(fmt::format("/{}", key), fmt::format("must be an integer >= {}", min));
    out = v.get<int64_t>();
    return true;
  };
  for (auto it = a.begin(); it != a.end(); ++it) {
    static const char* kKnown[] = {"family",  "runtime",       "workers", "clusters",     "cluster",
                                   "aic_ops", "aicpu_threads", "mesh",    "scratch_bytes"};
    if (std::find_if(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return it.key() == k; }) == std::end(kKnown))
      return fail(fmt::format("/{}", ir::pointer_token(it.key())), "unknown field");
  }
  if (!a.contains("family") || !a["family"].is_string())
    return fail("/family", "must be a string (gpu, ascend, tx8, ...)");
  t.family = a["family"].get<std::string>();
  if (a.contains("runtime")) {
    if (!a["runtime"].is_string() || !builtin_runtime(a["runtime"].get<std::string>()))
      return fail("/runtime", fmt::format("must name a built-in runtime ({})",
                                          fmt::join(builtin_runtime_names(), ", ")));
    t.runtime = a["runtime"].get<std::string>();
  } else {  // the first built-in runtime of the target's family
    for (const std::string& n : builtin_runtime_names())
      if (builtin_runtime(n)->family == t.family) {
        t.runtime = n;
        break;
      }
    if (t.runtime.empty()) t.runtime = "amk-cuda";
  }
  if (!a.contains("workers") || !a["workers"].is_array() || a["workers"].empty())
    return fail("/workers", "must be a non-empty list of {\"kind\", \"count\"}");
  for (size_t i = 0; i < a["workers"].size(); ++i) {
    const json& w = a["workers"][i];
    if (!w.is_object() || !w.contains("kind") || !w["kind"].is_string() || !w.contains("count") ||
        !w["count"].is_number_integer() || w["count"].get<int64_t>() <= 0 || w.size() != 2)
      return fail(fmt::format("/workers/{}", i),
                  "must be {\"kind\": string, \"count\": positive integer}");
    t.workers.push_back({w["kind"].get<std::string>(), w["count"].get<int64_t>()});
  }
  if (!int_at("clusters", t.clusters, 0) || !int_at("aicpu_threads", t.aicpu_threads, 0) ||
      !int_at("scratch_bytes", t.scratch_bytes, 0))
    return false;
  if (a.contains("cluster")) {
    const json& c = a["cluster"];
    if (!c.is_object() || !c.contains("aic") || !c.contains("aiv") ||
        !c["aic"].is_number_integer() || !c["aiv"].is_number_integer() || c.size() != 2)
      return fail("/cluster", "must be {\"aic\": integer, \"aiv\": integer}");
    t.cluster_aic = c["aic"].get<int64_t>();
    t.cluster_aiv = c["aiv"].get<int64_t>();
  }
  if (a.contains("aic_ops")) {
    const json& ops = a["aic_ops"];
    if (!ops.is_array()) return fail("/aic_ops", "must be a list of opcode names");
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto op = ops[i].is_string() ? ir::parse_op(ops[i].get<std::string>()) : std::nullopt;
      if (!op)
        return fail(fmt::format("/aic_ops/{}", i), "must be an opcode name (GEMV_TILE, ...)");
      t.aic_ops.push_back(*op);
    }
  }
  if (a.contains("mesh")) {
    if (!a["mesh"].is_array()) return fail("/mesh", "must be a list of positive integers");
    for (const json& d : a["mesh"]) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        return fail("/mesh", "must be a list of positive integers");
      t.mesh.push_back(d.get<int64_t>());
    }
  }
  return true;
}

}  // namespace

ir::Result<TargetSpec> parse_target_spec(std::string_view text, std::string_view origin) {
  auto fail = [&](ir::Diagnostic d) {
    d.file = origin;
    return ir::Result<TargetSpec>(std::move(d));
  };
  ir::Result<ir::Target> r = ir::parse_target(text);
  if (!r) {
    ir::set_file(r.diagnostics, origin);
    return std::move(r.diagnostics);
  }
  TargetSpec t;
  t.record = std::move(*r);
  json extra = t.record.extra.json();
  t.record.extra = ir::JsonValue();
  if (!extra.is_object() || !extra.contains("amk"))
    return fail(ir::error("target.field",
                          "missing (a target file names its workers: \"amk\": {\"family\", "
                          "\"workers\": [{\"kind\", \"count\"}]})",
                          "/amk"));
  for (auto it = extra.begin(); it != extra.end(); ++it)
    if (it.key() != "amk")
      return fail(ir::error("target.field", "unknown field", "/" + ir::pointer_token(it.key())));
  ir::Diagnostic why;
  if (!read_extension(extra["amk"], t, why)) return fail(std::move(why));
  const int64_t sms = t.record.num_sms.is_int ? t.record.num_sms.i : -1;
  if (sms <= 0 || t.num_workers() != sms)
    return fail(ir::error("target.field",
                          fmt::format("{} must equal the number of workers in /amk/workers ({})",
                                      t.record.num_sms.as_double(), t.num_workers()),
                          "/num_sms"));
  if (t.clusters > 0 && (t.cluster_aic * t.clusters != t.count_of("aic") ||
                         t.cluster_aiv * t.clusters != t.count_of("aiv")))
    return fail(ir::error("target.field",
                          fmt::format("{} clusters of {} AIC + {} AIV do not match the workers",
                                      t.clusters, t.cluster_aic, t.cluster_aiv),
                          "/amk/cluster"));
  ir::Result<TargetSpec> out(std::move(t));
  out.diagnostics = std::move(r.diagnostics);
  ir::set_file(out.diagnostics, origin);
  return out;
}

std::string write_target_spec(const TargetSpec& t) {
  json a = json::object();
  a["family"] = t.family;
  a["runtime"] = t.runtime;
  json w = json::array();
  for (const WorkerKind& k : t.workers) w.push_back({{"kind", k.kind}, {"count", k.count}});
  a["workers"] = w;
  if (t.clusters) a["clusters"] = t.clusters;
  if (t.cluster_aic || t.cluster_aiv)
    a["cluster"] = {{"aic", t.cluster_aic}, {"aiv", t.cluster_aiv}};
  if (!t.aic_ops.empty()) {
    json ops = json::array();
    for (ir::Op op : t.aic_ops) ops.push_back(std::string(ir::name(op)));
    a["aic_ops"] = ops;
  }
  if (t.aicpu_threads) a["aicpu_threads"] = t.aicpu_threads;
  if (!t.mesh.empty()) a["mesh"] = t.mesh;
  a["scratch_bytes"] = t.scratch_bytes;
  ir::Target rec = t.record;
  json extra = json::object();
  extra["amk"] = a;
  rec.extra = ir::JsonValue(extra);
  return ir::write_target(rec) + "\n";
}

ir::Result<TargetSpec> load_target(std::string_view name_or_path) {
  auto file = ir::read_builtin_or_file(name_or_path, amk_builtin_target_files(), "targets",
                                       "target", "a target .json");
  if (!file) return std::move(file.diagnostics);
  return parse_target_spec(file->second, file->first);
}

std::vector<std::string> builtin_target_names() {
  return ir::builtin_names(amk_builtin_target_files());
}

}  // namespace amk::targets
