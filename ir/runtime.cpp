#include "ir/runtime.h"

#include <algorithm>
#include <charconv>
#include <type_traits>
#include <unordered_map>
#include <variant>

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

// Reports a record's fields of the wrong type with their pointer.
class Fields {
 public:
  Fields(Diagnostics& d, std::string base) : d_(d), base_(std::move(base)) {}
  void bad(std::string_view key, std::string_view expected) {
    d_.push_back(error("runtime.field", fmt::format("runtime field '{}' must be {}", key, expected),
                       base_ + "/" + pointer_token(key)));
  }
  std::string base() const { return base_; }

 private:
  Diagnostics& d_;
  std::string base_;
};

// A field of a record the runtime carries (RuntimeScope, ForeignTask): its key and its member,
// in the order the record is written. MPK's tasks carry only their identity (not pto_only); a
// flag is written only when set.
template <class R>
struct RecordField {
  std::string_view key;
  std::variant<int32_t R::*, int64_t R::*, uint64_t R::*, bool R::*, std::string R::*,
               std::array<int32_t, 3> R::*>
      member;
  bool pto_only = false;
};

constexpr RecordField<RuntimeScope> kScopeFields[] = {
    {"parent", &RuntimeScope::parent}, {"depth", &RuntimeScope::depth},
    {"ring", &RuntimeScope::ring},     {"site", &RuntimeScope::site},
    {"begin", &RuntimeScope::begin},   {"end", &RuntimeScope::end},
};

constexpr RecordField<ForeignTask> kTaskFields[] = {
    {"id", &ForeignTask::id},
    {"kind", &ForeignTask::kind},
    {"variant", &ForeignTask::variant},
    {"scope", &ForeignTask::scope, true},
    {"kernels", &ForeignTask::kernels, true},
    {"heap", &ForeignTask::heap, true},
    {"fanin", &ForeignTask::fanin, true},
    {"early", &ForeignTask::early, true},
    {"manual", &ForeignTask::manual, true},
};

template <class R, size_t N>
ojson record_json(const R& r, const RecordField<R> (&fields)[N], bool pto) {
  ojson j = ojson::object();
  for (const RecordField<R>& f : fields) {
    if (f.pto_only && !pto) continue;
    std::visit(
        [&](auto m) {
          const auto& v = r.*m;
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) {
            if (v) j[std::string(f.key)] = true;
          } else {
            j[std::string(f.key)] = v;
          }
        },
        f.member);
  }
  return j;
}

// Reads one field's value into `out`, reporting a wrong type at its key.
void read_value(const ojson& v, std::string_view key, Fields& f, uint64_t& out) {
  if (auto x = as_u64(v)) {
    out = *x;
  } else {
    f.bad(key, "an unsigned integer");
  }
}
void read_value(const ojson& v, std::string_view key, Fields& f, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
  } else {
    f.bad(key, "a string");
  }
}
void read_value(const ojson& v, std::string_view key, Fields& f, std::array<int32_t, 3>& out) {
  bool ok = v.is_array() && v.size() == 3;
  for (size_t k = 0; ok && k < 3; ++k) {
    auto x = as_int(v[k]);
    ok = x && *x >= INT32_MIN && *x <= INT32_MAX;
    if (ok) out[k] = static_cast<int32_t>(*x);
  }
  if (!ok) f.bad(key, "a list of three integers");
}
void read_value(const ojson& v, std::string_view key, Fields& f, bool& out) {
  if (v.is_boolean()) {
    out = v.get<bool>();
  } else {
    f.bad(key, "a boolean");
  }
}
template <class T>
requires std::is_integral_v<T>
void read_value(const ojson& v, std::string_view key, Fields& f, T& out) {
  auto x = as_int(v);
  if (x && *x >= std::numeric_limits<T>::min() && *x <= std::numeric_limits<T>::max()) {
    out = static_cast<T>(*x);
  } else {
    f.bad(key, "an integer");
  }
}

template <class R, size_t N>
void read_record(const ojson& o, Fields& f, R& r, const RecordField<R> (&fields)[N]) {
  for (const RecordField<R>& field : fields) {
    auto it = o.find(std::string(field.key));
    if (it == o.end()) continue;
    std::visit([&](auto m) { read_value(*it, field.key, f, r.*m); }, field.member);
  }
}

void read_scope(const ojson& o, Fields& f, RuntimeScope& s) {
  read_record(o, f, s, kScopeFields);
}

void read_task(const ojson& o, Fields& f, ForeignTask& t) {
  read_record(o, f, t, kTaskFields);
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

std::array<int64_t, 2> pto_block_cores(int32_t kind) {
  switch (static_cast<PtoShape>(kind)) {
    case PtoShape::Mix:
      return {1, 2};
    case PtoShape::Aic:
      return {1, 0};
    case PtoShape::Aiv:
      return {0, 1};
    default:
      return {0, 0};
  }
}

std::vector<std::array<int64_t, 2>> Runtime::twait_tasks() const {
  std::vector<std::array<int64_t, 2>> out;
  if (twaits.empty()) return out;
  std::unordered_map<uint64_t, int64_t> at;
  for (size_t t = 0; t < tasks.size(); ++t)
    if (tasks[t].id != UINT64_MAX) at.emplace(tasks[t].id, static_cast<int64_t>(t));
  for (const auto& ids : twaits) {
    std::array<int64_t, 2>& x = out.emplace_back(std::array<int64_t, 2>{-1, -1});
    for (size_t k = 0; k < 2; ++k)
      if (auto it = at.find(ids[k]); it != at.end()) x[k] = it->second;
  }
  return out;
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
    for (const RuntimeScope& x : r.scopes) s.push_back(record_json(x, kScopeFields, true));
    j["scopes"] = std::move(s);
  }
  if (!r.tasks.empty()) {
    ojson t = ojson::array();
    for (const ForeignTask& x : r.tasks)
      t.push_back(record_json(x, kTaskFields, r.kind != RuntimeKind::Mpk));
    j["tasks"] = std::move(t);
  }
  if (!r.twaits.empty()) {
    ojson w = ojson::array();
    for (const auto& [waiter, notifier] : r.twaits) w.push_back(ojson::array({waiter, notifier}));
    j["twaits"] = std::move(w);
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
    if (key == "twaits") {
      bool ok = it->is_array();
      for (size_t i = 0; ok && i < it->size(); ++i) {
        const ojson& e = (*it)[i];
        std::optional<uint64_t> w, n;
        ok = e.is_array() && e.size() == 2 && (w = as_u64(e[0])) && (n = as_u64(e[1]));
        if (ok) r.twaits.push_back({*w, *n});
      }
      if (!ok)
        d.push_back(error("runtime.field",
                          "runtime field 'twaits' must be a list of [waiter, notifier] task ids",
                          base + "/twaits"));
      continue;
    }
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
  if (key == "twait" && eq != std::string_view::npos) {
    const std::string_view pair = key_value.substr(eq + 1);
    const size_t colon = pair.find(':');
    uint64_t ids[2] = {0, 0};
    bool ok = colon != std::string_view::npos;
    for (size_t k = 0; ok && k < 2; ++k) {
      const std::string_view id = k ? pair.substr(colon + 1) : pair.substr(0, colon);
      auto res = std::from_chars(id.data(), id.data() + id.size(), ids[k]);
      ok = !id.empty() && res.ec == std::errc() && res.ptr == id.data() + id.size();
    }
    if (!ok)
      return error("launch.value",
                   fmt::format("--launch {}: expected twait=WAITER:NOTIFIER, two task ids as "
                               "deps.json writes them",
                               key_value));
    r.twaits.push_back({ids[0], ids[1]});
    return {};
  }
  auto cap = parse_cap(key);
  if (eq == std::string_view::npos || !cap) {
    std::string keys;
    for (const CapInfo& c : kCaps) keys += (keys.empty() ? "" : ", ") + std::string(c.name);
    return error(
        "launch.key",
        fmt::format("--launch {}: expected KEY=VALUE with KEY one of: {}, twait", key_value, keys));
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
