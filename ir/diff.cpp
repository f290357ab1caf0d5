#include "ir/diff.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "ir/pyjson.h"

namespace amk::ir {
namespace {

using ojson = nlohmann::ordered_json;

ojson param_json(const ParamValue& v) {
  switch (v.kind) {
    case ParamValue::Kind::Int:
      return ojson(v.i);
    case ParamValue::Kind::Float:
      return ojson(v.f);
    case ParamValue::Kind::Bool:
      return ojson(v.i != 0);
    case ParamValue::Kind::Other:
      return v.other.json();
  }
  return {};
}

bool unique_nonempty(const std::vector<std::string>& keys) {
  std::unordered_set<std::string> seen;
  for (const auto& k : keys)
    if (k.empty() || !seen.insert(k).second) return false;
  return true;
}

// A program seen through stable names: buffers by name, counters by their producers.
class View {
 public:
  View(const Program& p, bool by_label, bool buffers_by_name)
      : p_(p), by_label_(by_label), buffers_by_name_(buffers_by_name) {
    for (size_t t = 0; t < p.tasks.size(); ++t) producers_[p.tasks[t].out_counter].push_back(t);
    if (p.pages)
      for (auto [b, pg] : p.pages->buffer_to_page) page_of_[b] = pg;
  }

  std::string task_key(size_t t) const {
    return by_label_ ? p_.tasks[t].label : fmt::format("#{}", t);
  }
  std::string buffer_key(size_t b) const {
    return buffers_by_name_ ? p_.buffers[b].name : fmt::format("#{}", b);
  }
  std::string buffer_ref(int64_t id) const {
    if (id >= 0 && id < static_cast<int64_t>(p_.buffers.size()))
      return p_.buffers[static_cast<size_t>(id)].name;
    return fmt::format("#{} (missing)", id);
  }
  // A counter named by who increments it, so renumbered counters compare equal.
  std::string counter_ref(int64_t c) const {
    auto it = producers_.find(c);
    bool exists = c >= 0 && c < static_cast<int64_t>(p_.counters.size());
    if (it == producers_.end())
      return exists ? fmt::format("#{} (no producer)", c) : fmt::format("#{} (missing)", c);
    const auto& ps = it->second;
    std::string s = p_.tasks[ps[0]].display().empty() ? fmt::format("#{}", ps[0])
                                                      : std::string(p_.tasks[ps[0]].display());
    if (!by_label_) s = fmt::format("#{}", c);
    if (ps.size() > 1) s += fmt::format(" (+{} producers)", ps.size() - 1);
    return s;
  }
  // In label mode a counter is keyed by its first producer (its producer count is a field).
  std::string counter_key(size_t c) const {
    if (!by_label_) return fmt::format("#{}", c);
    auto it = producers_.find(static_cast<int64_t>(c));
    if (it == producers_.end()) return fmt::format("unproduced:{}", p_.counters[c].note);
    return std::string(p_.tasks[it->second[0]].display());
  }

  ojson task(size_t t) const {
    const Task& x = p_.tasks[t];
    ojson j = ojson::object();
    j["op"] = std::string(name(x.op));
    ojson in = ojson::array(), out = ojson::array(), waits = ojson::array();
    for (int64_t b : x.inputs) in.push_back(buffer_ref(b));
    for (int64_t b : x.outputs) out.push_back(buffer_ref(b));
    for (const Wait& w : x.waits)
      waits.push_back(fmt::format("{} >= {}", counter_ref(w.counter), w.threshold));
    j["inputs"] = std::move(in);
    j["outputs"] = std::move(out);
    j["out_counter"] = counter_ref(x.out_counter);
    j["waits"] = std::move(waits);
    ojson params = ojson::object();
    for (const Param& p : x.params) params[p.key] = param_json(p.value);
    j["params"] = std::move(params);
    j["sm"] = x.sm ? ojson(*x.sm) : ojson();
    j["est_bytes"] = x.est_bytes;
    j["est_flops"] = x.est_flops;
    if (!by_label_) j["label"] = x.label;
    if (!x.extra.is_null()) j["extra"] = x.extra.json();
    return j;
  }
  ojson buffer(size_t b) const {
    const Buffer& x = p_.buffers[b];
    ojson j = ojson::object();
    if (!buffers_by_name_) j["name"] = x.name;
    j["kind"] = std::string(name(x.kind));
    j["dtype"] = std::string(name(x.dtype));
    j["shape"] = x.shape;
    j["space"] = std::string(name(x.space));
    j["source"] = x.source ? ojson(*x.source) : ojson();
    auto it = page_of_.find(static_cast<int64_t>(b));
    j["page"] = it == page_of_.end() ? ojson() : ojson(it->second);
    if (!x.extra.is_null()) j["extra"] = x.extra.json();
    return j;
  }
  ojson counter(size_t c) const {
    const Counter& x = p_.counters[c];
    ojson j = ojson::object();
    j["init"] = x.init;
    j["note"] = x.note;
    auto it = producers_.find(static_cast<int64_t>(c));
    j["producers"] = it == producers_.end() ? 0 : it->second.size();
    if (!x.extra.is_null()) j["extra"] = x.extra.json();
    return j;
  }
  ojson page(size_t pg) const {
    const Page& x = p_.pages->pages[pg];
    ojson j = ojson::object();
    j["space"] = std::string(name(x.space));
    j["nbytes"] = x.nbytes;
    j["live_start"] = x.live_start;
    j["live_end"] = x.live_end;
    ojson occ = ojson::array();
    for (auto [b, p] : p_.pages->buffer_to_page)
      if (p == static_cast<int64_t>(pg)) occ.push_back(buffer_ref(b));
    j["buffers"] = std::move(occ);
    return j;
  }

 private:
  const Program& p_;
  bool by_label_, buffers_by_name_;
  std::unordered_map<int64_t, std::vector<size_t>> producers_;
  std::unordered_map<int64_t, int64_t> page_of_;
};

bool strict_eq(const ojson& a, const ojson& b) {
  return JsonValue(a) == JsonValue(b);
}

void jdiff(const ojson& a, const ojson& b, const std::string& path, std::vector<FieldChange>& out) {
  if (strict_eq(a, b)) return;
  auto sub = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (b.contains(it.key())) {
        jdiff(it.value(), b.at(it.key()), sub(it.key()), out);
      } else {
        out.push_back({sub(it.key()), JsonValue(it.value()), JsonValue(), false, true});
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it)
      if (!a.contains(it.key()))
        out.push_back({sub(it.key()), JsonValue(), JsonValue(it.value()), true, false});
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size() && !a.empty() &&
      (a[0].is_object() || a[0].is_array())) {
    for (size_t i = 0; i < a.size(); ++i) jdiff(a[i], b[i], fmt::format("{}[{}]", path, i), out);
    return;
  }
  out.push_back({path, JsonValue(a), JsonValue(b)});
}

// A record's JSON as the file holds it (unknown fields beside the known ones), null when absent.
template <class R, class ToJson>
ojson optional_json(const std::optional<R>& r, ToJson to_json) {
  return r ? to_json(*r).json() : ojson();
}

// Pairs entities by key and appends changed/removed (A order) then added (B order).
template <typename KeyA, typename KeyB, typename JsonA, typename JsonB>
void diff_entities(const char* entity, size_t na, size_t nb, KeyA key_a, KeyB key_b, JsonA json_a,
                   JsonB json_b, std::vector<EntityChange>& out) {
  std::unordered_map<std::string, size_t> in_b;
  for (size_t i = 0; i < nb; ++i) in_b.emplace(key_b(i), i);
  std::vector<bool> matched(nb, false);
  for (size_t i = 0; i < na; ++i) {
    std::string k = key_a(i);
    auto it = in_b.find(k);
    if (it == in_b.end() || matched[it->second]) {
      out.push_back({EntityChange::Kind::Removed, entity, k, static_cast<int64_t>(i), -1, {}});
      continue;
    }
    matched[it->second] = true;
    EntityChange ch{EntityChange::Kind::Changed,      entity, k, static_cast<int64_t>(i),
                    static_cast<int64_t>(it->second), {}};
    jdiff(json_a(i), json_b(it->second), "", ch.fields);
    if (!ch.fields.empty()) out.push_back(std::move(ch));
  }
  for (size_t i = 0; i < nb; ++i)
    if (!matched[i])
      out.push_back({EntityChange::Kind::Added, entity, key_b(i), -1, static_cast<int64_t>(i), {}});
}

std::string compact(const JsonValue& v, bool absent) {
  if (absent) return "(absent)";
  return json_line(v.json());  // Python's json.dumps: its floats, a lone surrogate as its escape
}

}  // namespace

DiffResult diff_programs(const Program& a, const Program& b, DiffMatch match) {
  DiffResult r;
  std::vector<std::string> la, lb, na, nb;
  for (const Task& t : a.tasks) la.push_back(t.label);
  for (const Task& t : b.tasks) lb.push_back(t.label);
  for (const Buffer& x : a.buffers) na.push_back(x.name);
  for (const Buffer& x : b.buffers) nb.push_back(x.name);
  bool labels_ok = unique_nonempty(la) && unique_nonempty(lb);
  r.by_label = match == DiffMatch::Label || (match == DiffMatch::Auto && labels_ok);
  if (match == DiffMatch::Label && !labels_ok) r.by_label = false;
  bool names_ok = r.by_label && unique_nonempty(na) && unique_nonempty(nb);
  View va(a, r.by_label, names_ok), vb(b, r.by_label, names_ok);

  EntityChange prog{EntityChange::Kind::Changed, "program", "", -1, -1, {}};
  jdiff(ojson(a.ir_version), ojson(b.ir_version), "ir_version", prog.fields);
  jdiff(ojson(a.abi_version), ojson(b.abi_version), "abi_version", prog.fields);
  jdiff(a.meta.json(), b.meta.json(), "meta", prog.fields);
  jdiff(optional_json(a.target, target_json), optional_json(b.target, target_json), "target",
        prog.fields);
  jdiff(optional_json(a.config, config_json), optional_json(b.config, config_json), "config",
        prog.fields);
  jdiff(a.extra.json(), b.extra.json(), "extra", prog.fields);
  if (!prog.fields.empty()) r.changes.push_back(std::move(prog));

  diff_entities(
      "buffer", a.buffers.size(), b.buffers.size(), [&](size_t i) { return va.buffer_key(i); },
      [&](size_t i) { return vb.buffer_key(i); }, [&](size_t i) { return va.buffer(i); },
      [&](size_t i) { return vb.buffer(i); }, r.changes);
  diff_entities(
      "counter", a.counters.size(), b.counters.size(), [&](size_t i) { return va.counter_key(i); },
      [&](size_t i) { return vb.counter_key(i); }, [&](size_t i) { return va.counter(i); },
      [&](size_t i) { return vb.counter(i); }, r.changes);
  diff_entities(
      "task", a.tasks.size(), b.tasks.size(), [&](size_t i) { return va.task_key(i); },
      [&](size_t i) { return vb.task_key(i); }, [&](size_t i) { return va.task(i); },
      [&](size_t i) { return vb.task(i); }, r.changes);
  size_t pa = a.pages ? a.pages->pages.size() : 0, pb = b.pages ? b.pages->pages.size() : 0;
  if ((a.pages.has_value() != b.pages.has_value()) && pa == 0 && pb == 0) {
    EntityChange ch{EntityChange::Kind::Changed, "program", "", -1, -1, {}};
    ch.fields.push_back({"pages", JsonValue(a.pages ? ojson::object() : ojson()),
                         JsonValue(b.pages ? ojson::object() : ojson())});
    r.changes.push_back(std::move(ch));
  }
  diff_entities(
      "page", pa, pb, [](size_t i) { return fmt::format("#{}", i); },
      [](size_t i) { return fmt::format("#{}", i); }, [&](size_t i) { return va.page(i); },
      [&](size_t i) { return vb.page(i); }, r.changes);
  return r;
}

std::string format_diff(const DiffResult& d) {
  std::string out;
  std::map<std::string, std::array<size_t, 3>> counts;
  for (const EntityChange& c : d.changes) {
    if (c.entity == "program") {
      for (const FieldChange& f : c.fields)
        out += fmt::format("~ {}: {} -> {}\n", f.field, compact(f.a, f.a_absent),
                           compact(f.b, f.b_absent));
      continue;
    }
    ++counts[c.entity][static_cast<size_t>(c.kind)];
    auto ids = [&] {
      if (c.id_a >= 0 && c.id_b >= 0)
        return c.id_a == c.id_b ? fmt::format(" (#{})", c.id_a)
                                : fmt::format(" (#{} -> #{})", c.id_a, c.id_b);
      return fmt::format(" (#{})", c.id_a >= 0 ? c.id_a : c.id_b);
    };
    bool keyed_by_id = !c.key.empty() && c.key[0] == '#';
    std::string head = fmt::format("{} {}{}", c.entity, c.key, keyed_by_id ? "" : ids());
    switch (c.kind) {
      case EntityChange::Kind::Added:
        out += "+ " + head + "\n";
        break;
      case EntityChange::Kind::Removed:
        out += "- " + head + "\n";
        break;
      case EntityChange::Kind::Changed:
        out += "~ " + head + "\n";
        for (const FieldChange& f : c.fields)
          out += fmt::format("    {}: {} -> {}\n", f.field, compact(f.a, f.a_absent),
                             compact(f.b, f.b_absent));
        break;
    }
  }
  if (d.same()) return "programs are the same\n";
  std::string summary;
  for (const auto& [entity, n] : counts) {
    std::vector<std::string> parts;
    if (n[2]) parts.push_back(fmt::format("{} changed", n[2]));
    if (n[0]) parts.push_back(fmt::format("{} added", n[0]));
    if (n[1]) parts.push_back(fmt::format("{} removed", n[1]));
    summary +=
        fmt::format("{}{}s: {}", summary.empty() ? "" : "; ", entity, fmt::join(parts, ", "));
  }
  if (summary.empty()) summary = "program fields only";
  out += fmt::format("{} (tasks matched by {})\n", summary, d.by_label ? "label" : "id");
  return out;
}

std::string diff_to_json(const DiffResult& d) {
  ojson j = ojson::object();
  j["same"] = d.same();
  j["match"] = d.by_label ? "label" : "id";
  ojson summary = ojson::object();
  ojson changes = ojson::array();
  static const char* kKinds[] = {"added", "removed", "changed"};
  for (const EntityChange& c : d.changes) {
    ojson e = ojson::object();
    e["entity"] = c.entity;
    e["change"] = kKinds[static_cast<size_t>(c.kind)];
    e["key"] = c.key;
    e["a_id"] = c.id_a >= 0 ? ojson(c.id_a) : ojson();
    e["b_id"] = c.id_b >= 0 ? ojson(c.id_b) : ojson();
    ojson fields = ojson::array();
    for (const FieldChange& f : c.fields) {
      ojson fc = {{"field", f.field}};
      if (!f.a_absent) fc["a"] = f.a.json();
      if (!f.b_absent) fc["b"] = f.b.json();
      fields.push_back(std::move(fc));
    }
    e["fields"] = std::move(fields);
    changes.push_back(std::move(e));
    if (c.entity != "program") {
      if (!summary.contains(c.entity))
        summary[c.entity] = {{"added", 0}, {"removed", 0}, {"changed", 0}};
      summary[c.entity][kKinds[static_cast<size_t>(c.kind)]] =
          summary[c.entity][kKinds[static_cast<size_t>(c.kind)]].get<int>() + 1;
    }
  }
  j["summary"] = std::move(summary);
  j["changes"] = std::move(changes);
  std::string out;
  append_json_value(out, j, 0);
  out += '\n';
  return out;
}

std::string layer_of(std::string_view label) {
  if (label.empty()) return "(no label)";
  return std::string(label.substr(0, std::min(label.find('.'), label.find('['))));
}

std::vector<LayerChanges> diff_layers(const DiffResult& d, const Program& a, const Program& b) {
  std::vector<LayerChanges> rows;
  std::unordered_map<std::string, size_t> row_of;
  auto row = [&](const std::string& layer) -> LayerChanges& {
    auto [it, fresh] = row_of.emplace(layer, rows.size());
    if (fresh) rows.push_back({layer});
    return rows[it->second];
  };
  for (const Program* p : {&b, &a})  // the rows in program order
    for (const Task& t : p->tasks) row(layer_of(t.label));
  for (const EntityChange& c : d.changes) {
    if (c.entity != "task") continue;
    const std::string& label = c.id_b >= 0 && static_cast<size_t>(c.id_b) < b.tasks.size()
                                   ? b.tasks[static_cast<size_t>(c.id_b)].label
                               : c.id_a >= 0 && static_cast<size_t>(c.id_a) < a.tasks.size()
                                   ? a.tasks[static_cast<size_t>(c.id_a)].label
                                   : c.key;
    LayerChanges& r = row(layer_of(label));
    (c.kind == EntityChange::Kind::Added     ? r.added
     : c.kind == EntityChange::Kind::Removed ? r.removed
                                             : r.changed)++;
  }
  std::erase_if(rows, [](const LayerChanges& r) { return !r.changed && !r.added && !r.removed; });
  return rows;
}

}  // namespace amk::ir
