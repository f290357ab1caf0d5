#include "ir/runtime.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/program.h"

namespace amk::ir {
namespace {

using ojson = nlohmann::ordered_json;

constexpr CapInfo kCaps[kCapCount] = {
    {Cap::workers, "workers", false, "MPK worker CTAs, one per SM"},
    {Cap::schedulers, "schedulers", false, "MPK scheduler warps, four per scheduler CTA"},
    {Cap::sms, "sms", false, "SMs of the chip (MPK co-residency)"},
    {Cap::worker_queue, "worker_queue", false, "MPK per-worker task queue entries"},
    {Cap::scheduler_queue, "scheduler_queue", false, "MPK per-scheduler event queue entries"},
    {Cap::task_window, "task_window", true, "PTO task window slots per ring"},
    {Cap::heap, "heap", true, "PTO output heap bytes per ring"},
    {Cap::dep_pool, "dep_pool", true, "PTO dependency-list pool entries per ring"},
    {Cap::tensormap, "tensormap", false, "PTO TensorMap entries (shared by the rings)"},
    {Cap::ready_queue, "ready_queue", false, "PTO ready queue slots per resource shape"},
    {Cap::fanin_inline, "fanin_inline", false, "PTO fan-in edges kept inline per task"},
    {Cap::fanin_spill, "fanin_spill", true, "PTO fan-in spill pool entries per ring"},
    {Cap::cores_aic, "cores_aic", false, "PTO AIC (cube) cores"},
    {Cap::cores_aiv, "cores_aiv", false, "PTO AIV (vector) cores"},
};

// Reads an int64 from a JSON number, or from a decimal string (PTO writes 64-bit values so).
std::optional<int64_t> as_int(const ojson& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
    return v.get<int64_t>();
  }
  return std::nullopt;
}

std::optional<uint64_t> as_u64(const ojson& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0)
    return static_cast<uint64_t>(v.get<int64_t>());
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    uint64_t out = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    if (r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty()) return out;
  }
  return std::nullopt;
}

// One pass over a JSON object that reports wrong types with their pointer.
class Fields {
 public:
  Fields(Diagnostics& d, std::string base) : d_(d), base_(std::move(base)) {}
  void bad(std::string_view key, std::string_view expected) {
    d_.push_back(error("runtime.field", fmt::format("runtime field '{}' must be {}", key, expected),
                       base_ + "/" + pointer_token(key)));
  }
  template <class T>
  void integer(const ojson& o, std::string_view key, T& out) {
    auto it = o.find(std::string(key));
    if (it == o.end()) return;
    auto v = as_int(*it);
    if (!v || *v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max())
      return bad(key, "an integer");
    out = static_cast<T>(*v);
  }
  void boolean(const ojson& o, std::string_view key, bool& out) {
    auto it = o.find(std::string(key));
    if (it == o.end()) return;
    if (!it->is_boolean()) return bad(key, "a boolean");
    out = it->get<bool>();
  }
  std::string base() const { return base_; }

 private:
  Diagnostics& d_;
  std::string base_;
};

ojson scope_json(const RuntimeScope& s) {
  ojson j = ojson::object();
  j["parent"] = s.parent;
  j["depth"] = s.depth;
  j["ring"] = s.ring;
  j["site"] = s.site;
  j["begin"] = s.begin;
  j["end"] = s.end;
  return j;
}

ojson task_json(const ForeignTask& t, RuntimeKind kind) {
  ojson j = ojson::object();
  j["id"] = t.id;
  j["kind"] = t.kind;
  j["variant"] = t.variant;
  if (kind == RuntimeKind::Mpk) return j;
  j["scope"] = t.scope;
  j["kernels"] = ojson::array({t.kernels[0], t.kernels[1], t.kernels[2]});
  j["heap"] = t.heap;
  j["fanin"] = t.fanin;
  if (t.early) j["early"] = true;
  if (t.manual) j["manual"] = true;
  return j;
}

void read_scope(const ojson& o, Fields& f, RuntimeScope& s) {
  f.integer(o, "parent", s.parent);
  f.integer(o, "depth", s.depth);
  f.integer(o, "ring", s.ring);
  f.integer(o, "begin", s.begin);
  f.integer(o, "end", s.end);
  if (auto it = o.find("site"); it != o.end()) {
    if (it->is_string()) {
      s.site = it->get<std::string>();
    } else {
      f.bad("site", "a string");
    }
  }
}

void read_task(const ojson& o, Fields& f, ForeignTask& t) {
  if (auto it = o.find("id"); it != o.end()) {
    if (auto v = as_u64(*it)) {
      t.id = *v;
    } else {
      f.bad("id", "an unsigned integer");
    }
  }
  f.integer(o, "kind", t.kind);
  f.integer(o, "variant", t.variant);
  f.integer(o, "scope", t.scope);
  f.integer(o, "heap", t.heap);
  f.integer(o, "fanin", t.fanin);
  f.boolean(o, "early", t.early);
  f.boolean(o, "manual", t.manual);
  if (auto it = o.find("kernels"); it != o.end()) {
    bool ok = it->is_array() && it->size() == 3;
    for (size_t k = 0; ok && k < 3; ++k) {
      auto v = as_int((*it)[k]);
      ok = v && *v >= INT32_MIN && *v <= INT32_MAX;
      if (ok) t.kernels[k] = static_cast<int32_t>(*v);
    }
    if (!ok) f.bad("kernels", "a list of three integers");
  }
}

// A list of records under `key`, each read by `read`.
template <class T, class Read>
void read_records(const ojson& o, std::string_view key, Diagnostics& d, std::string_view base,
                  std::vector<T>& out, Read read) {
  auto it = o.find(std::string(key));
  if (it == o.end()) return;
  const std::string at = fmt::format("{}/{}", base, key);
  if (!it->is_array()) {
    d.push_back(error("runtime.field", fmt::format("runtime field '{}' must be a list", key), at));
    return;
  }
  out.resize(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const ojson& e = (*it)[i];
    Fields f(d, fmt::format("{}/{}", at, i));
    if (!e.is_object()) {
      d.push_back(error("runtime.field", fmt::format("{} entries must be objects", key), f.base()));
      continue;
    }
    read(e, f, out[i]);
  }
}

}  // namespace

std::span<const CapInfo> cap_table() {
  return kCaps;
}

const CapInfo& cap_info(Cap k) {
  return kCaps[static_cast<size_t>(k)];
}

std::optional<Cap> parse_cap(std::string_view name) {
  for (const CapInfo& c : kCaps)
    if (c.name == name) return c.key;
  return std::nullopt;
}

std::string_view name(RuntimeKind k) {
  switch (k) {
    case RuntimeKind::Amk:
      return "amk";
    case RuntimeKind::Mpk:
      return "mpk";
    case RuntimeKind::Pto:
      return "pto";
  }
  return "amk";
}

std::optional<RuntimeKind> parse_runtime_kind(std::string_view s) {
  for (RuntimeKind k : {RuntimeKind::Amk, RuntimeKind::Mpk, RuntimeKind::Pto})
    if (name(k) == s) return k;
  return std::nullopt;
}

std::optional<int64_t> runtime_default(RuntimeKind kind, Cap k) {
  if (kind == RuntimeKind::Mpk) {
    // persistent_kernel.cuh: per_worker_queue_len 8192, per_sched_queue_len 4096.
    if (k == Cap::worker_queue) return 8192;
    if (k == Cap::scheduler_queue) return 4096;
    return std::nullopt;
  }
  if (kind != RuntimeKind::Pto) return std::nullopt;
  // pto_runtime2_types.h (tensormap_and_ringbuffer): PTO2_TASK_WINDOW_SIZE, PTO2_HEAP_SIZE,
  // PTO2_DEP_LIST_POOL_SIZE (also the fan-in spill pool's), PTO2_TENSORMAP_POOL_SIZE,
  // PTO2_READY_QUEUE_SIZE, PTO2_FANIN_INLINE_CAP.
  switch (k) {
    case Cap::task_window:
      return 16384;
    case Cap::heap:
      return int64_t{256} * 1024 * 1024;
    case Cap::dep_pool:
    case Cap::fanin_spill:
      return 16384;
    case Cap::tensormap:
    case Cap::ready_queue:
      return 65536;
    case Cap::fanin_inline:
      return 64;
    default:
      return std::nullopt;
  }
}

std::optional<int64_t> Runtime::given(Cap k, int ring) const {
  const auto& v = caps[static_cast<size_t>(k)];
  if (v.empty()) return std::nullopt;
  return v[std::min(static_cast<size_t>(std::max(ring, 0)), v.size() - 1)];
}

std::optional<int64_t> Runtime::value(Cap k, int ring) const {
  if (auto v = given(k, ring)) return v;
  // PTO sizes its fan-in spill pool with the dependency pool's capacity.
  if (k == Cap::fanin_spill && kind == RuntimeKind::Pto)
    if (auto d = given(Cap::dep_pool, ring)) return d;
  return runtime_default(kind, k);
}

JsonValue runtime_json(const Runtime& r) {
  ojson j = ojson::object();
  j["kind"] = std::string(name(r.kind));
  for (const CapInfo& c : kCaps) {
    const auto& v = r.caps[static_cast<size_t>(c.key)];
    if (v.empty()) continue;
    if (v.size() == 1 && !c.per_ring) {
      j[std::string(c.name)] = v[0];
    } else {
      j[std::string(c.name)] = v;
    }
  }
  if (!r.scopes.empty()) {
    ojson s = ojson::array();
    for (const RuntimeScope& x : r.scopes) s.push_back(scope_json(x));
    j["scopes"] = std::move(s);
  }
  if (!r.tasks.empty()) {
    ojson t = ojson::array();
    for (const ForeignTask& x : r.tasks) t.push_back(task_json(x, r.kind));
    j["tasks"] = std::move(t);
  }
  if (r.extra.json().is_object())
    for (auto it = r.extra.json().begin(); it != r.extra.json().end(); ++it)
      j[it.key()] = it.value();
  return JsonValue(std::move(j));
}

Result<Runtime> parse_runtime(const JsonValue& v, std::string_view pointer) {
  const ojson& o = v.json();
  const std::string base(pointer);
  if (!o.is_object()) return error("runtime.field", "the runtime record must be an object", base);
  Diagnostics d;
  Runtime r;
  auto kind = o.find("kind");
  if (kind == o.end() || !kind->is_string() ||
      !parse_runtime_kind(kind->get_ref<const std::string&>())) {
    return error("runtime.field", "runtime field 'kind' must be \"amk\", \"mpk\" or \"pto\"",
                 base + "/kind");
  }
  r.kind = *parse_runtime_kind(kind->get_ref<const std::string&>());
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string& key = it.key();
    if (key == "kind" || key == "scopes" || key == "tasks") continue;
    auto cap = parse_cap(key);
    if (!cap) {
      if (r.extra.is_null()) r.extra = JsonValue::object();
      r.extra.mut()[key] = it.value();
      continue;
    }
    std::vector<int64_t> vals;
    bool ok = true;
    if (it->is_array()) {
      for (const ojson& e : *it) {
        auto x = as_int(e);
        ok = ok && x && *x >= 0;
        if (ok) vals.push_back(*x);
      }
      ok = ok && !vals.empty();
    } else {
      auto x = as_int(*it);
      ok = x && *x >= 0;
      if (ok) vals.push_back(*x);
    }
    if (!ok) {
      d.push_back(error("runtime.field",
                        fmt::format("runtime field '{}' must be a non-negative integer{}", key,
                                    cap_info(*cap).per_ring ? " or a list of them" : ""),
                        base + "/" + pointer_token(key)));
      continue;
    }
    r.set(*cap, std::move(vals));
  }
  read_records(o, "scopes", d, base, r.scopes, read_scope);
  read_records(o, "tasks", d, base, r.tasks, read_task);
  if (has_errors(d)) return d;
  Result<Runtime> res(std::move(r));
  res.diagnostics = std::move(d);
  return res;
}

void lift_runtime(Result<Program>& r) {
  if (!r.ok()) return;
  Program& p = *r;
  if (!p.extra.json().is_object() || !p.extra.json().contains("runtime")) return;
  const JsonValue field(p.extra.json().at("runtime"));
  // A "runtime" that is not amk's record (no known kind) stays an unknown field.
  const auto& j = field.json();
  if (!j.is_object() || !j.contains("kind") || !j.at("kind").is_string() ||
      !parse_runtime_kind(j.at("kind").get_ref<const std::string&>()))
    return;
  Result<Runtime> rt = parse_runtime(field);
  if (!rt) {
    append(r.diagnostics, std::move(rt.diagnostics));
    r.value.reset();
    return;
  }
  p.extra.mut().erase("runtime");
  if (p.extra.json().empty()) p.extra = JsonValue();
  p.runtime = std::move(rt.value);
  append(r.diagnostics, std::move(rt.diagnostics));
}

Status apply_launch(Runtime& r, std::string_view key_value) {
  const size_t eq = key_value.find('=');
  const std::string_view key = key_value.substr(0, eq);
  auto cap = parse_cap(key);
  if (eq == std::string_view::npos || !cap) {
    std::string keys;
    for (const CapInfo& c : kCaps) keys += (keys.empty() ? "" : ", ") + std::string(c.name);
    return error("launch.key", fmt::format("--launch {}: expected KEY=VALUE with KEY one of: {}",
                                           key_value, keys));
  }
  std::vector<int64_t> vals;
  std::string_view rest = key_value.substr(eq + 1);
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    int64_t x = 0;
    auto res = std::from_chars(item.data(), item.data() + item.size(), x);
    if (item.empty() || res.ec != std::errc() || res.ptr != item.data() + item.size() || x < 0)
      return error("launch.value",
                   fmt::format("--launch {}: '{}' is not a non-negative integer", key_value, item));
    vals.push_back(x);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (vals.size() > 1 && !cap_info(*cap).per_ring)
    return error("launch.value", fmt::format("--launch {}: '{}' takes one value, not one per ring",
                                             key_value, key));
  if (vals.size() > static_cast<size_t>(kPtoRings))
    return error("launch.value",
                 fmt::format("--launch {}: at most {} rings", key_value, kPtoRings));
  r.set(*cap, std::move(vals));
  return {};
}

}  // namespace amk::ir
