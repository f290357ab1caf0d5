#include "app/merge.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"
#include "ir/graph.h"
#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "lower/config.h"
#include "validate/validate.h"

namespace amk::app {
namespace {

using ojson = nlohmann::ordered_json;

std::string compact(const ojson* v) {
  return v ? ir::dump_text(*v) : std::string("(absent)");
}

bool same(const ojson* a, const ojson* b) {
  return (!a && !b) || (a && b && *a == *b);
}

// A list whose entries are lists or objects: merged as a set of entries.
bool entry_list(const ojson* v) {
  return v && v->is_array() && !v->empty() && std::all_of(v->begin(), v->end(), [](const ojson& x) {
           return x.is_array() || x.is_object();
         });
}

bool contains(const ojson& list, const ojson& x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

// The three-way merge of one value (nullptr: absent on that side). Sets `out` (absent: false).
bool merge3(const ojson* b, const ojson* o, const ojson* t, const std::string& ptr, ojson& out,
            ir::Diagnostics& conflicts) {
  if (same(o, t)) return o ? (out = *o, true) : false;
  if (same(o, b)) return t ? (out = *t, true) : false;
  if (same(t, b)) return o ? (out = *o, true) : false;
  const bool objects = o && t && o->is_object() && t->is_object() && (!b || b->is_object());
  if (objects) {
    out = ojson::object();
    // Keys in ours' order; theirs' new keys after the key that precedes them in theirs.
    std::vector<std::string> keys;
    for (const auto& [k, v] : o->items()) keys.push_back(k);
    std::string prev;
    for (const auto& [k, v] : t->items()) {
      if (std::find(keys.begin(), keys.end(), k) == keys.end())
        keys.insert(prev.empty() ? keys.begin() : std::find(keys.begin(), keys.end(), prev) + 1, k);
      prev = k;
    }
    for (const std::string& k : keys) {
      auto get = [&](const ojson* x) -> const ojson* {
        if (!x) return nullptr;
        auto it = x->find(k);
        return it == x->end() ? nullptr : &*it;
      };
      ojson v;
      if (merge3(get(b), get(o), get(t), ptr + "/" + ir::pointer_token(k), v, conflicts))
        out[k] = std::move(v);
    }
    return true;
  }
  const bool lists = (entry_list(o) || entry_list(t) || entry_list(b)) && o && t && o->is_array() &&
                     t->is_array() && (!b || b->is_array());
  if (lists) {  // entries added or removed on either side
    const ojson empty = ojson::array();
    const ojson& base = b ? *b : empty;
    out = ojson::array();
    for (const ojson& x : *o)
      if (!(contains(base, x) && !contains(*t, x))) out.push_back(x);
    for (const ojson& x : *t)
      if (!contains(base, x) && !contains(out, x)) out.push_back(x);
    return true;
  }
  ir::Diagnostic d = ir::error("merge.conflict",
                               fmt::format("changed two ways: ours {}, theirs {} (base {})",
                                           compact(o), compact(t), compact(b)),
                               ptr.empty() ? "/" : ptr);
  conflicts.push_back(std::move(d));
  return o ? (out = *o, true) : false;
}

// Read by amk's reader, as the program sides are: a lone surrogate in a name is kept.
ir::Result<ojson> parse(std::string_view text, const char* side) {
  ir::Result<ir::JsonValue> j = ir::parse_json_object(text, side);
  if (!j) return ir::error("merge.input", fmt::format("{}: not a JSON object", side));
  return std::move(j->mut());
}

// A program as entities keyed by meaning: buffers by name, counters by their producers' labels,
// tasks by label (references by those keys), pages by buffer name; everything else as is.
ir::Result<ojson> keyed(std::string_view text, const char* side) {
  ir::Result<ir::Program> p = ir::parse_program(text);
  if (!p) {
    ir::Diagnostics d = p.diagnostics;
    for (auto& x : d) x.message = fmt::format("{}: {}", side, x.message);
    return d;
  }
  const ojson j = ir::reread_object(ir::write_program(*p));
  std::vector<std::string> bname, ckey(p->counters.size()), tkey;
  for (const ir::Buffer& b : p->buffers) bname.push_back(b.name);
  std::set<std::string> seen;
  for (const ir::Task& t : p->tasks) {
    if (t.label.empty() || !seen.insert(t.label).second)
      return ir::error("merge.unsupported",
                       fmt::format("{}: task labels are not unique ('{}'), so tasks cannot be "
                                   "matched across versions",
                                   side, t.label));
    tkey.push_back(t.label);
  }
  if (std::set<std::string>(bname.begin(), bname.end()).size() != bname.size())
    return ir::error("merge.unsupported", fmt::format("{}: buffer names are not unique", side));
  const ir::Graph g = ir::Graph::build(*p);  // a counter's slot is its id
  for (size_t c = 0; c < ckey.size(); ++c) {
    std::vector<std::string> producers;
    for (uint32_t t : g.producers(static_cast<uint32_t>(c))) producers.push_back(tkey[t]);
    std::sort(producers.begin(), producers.end());
    ckey[c] = producers.empty() ? fmt::format("(unproduced #{})", c)
                                : fmt::format("{}", fmt::join(producers, " "));
  }
  auto buf = [&](const ojson& id) { return bname.at(id.get<size_t>()); };
  ojson out = ojson::object();
  for (const auto& [k, v] : j.items()) {
    if (k == "buffers") {
      ojson m = ojson::object();
      for (ojson b : v) {
        const std::string name = b["name"];
        b.erase("id");
        m[name] = std::move(b);
      }
      out[k] = std::move(m);
    } else if (k == "counters") {
      ojson m = ojson::object();
      for (size_t c = 0; c < v.size(); ++c) {
        ojson x = v[c];
        x.erase("id");
        m[ckey[c]] = std::move(x);
      }
      out[k] = std::move(m);
    } else if (k == "tasks") {
      ojson m = ojson::object();
      for (size_t i = 0; i < v.size(); ++i) {
        ojson t = v[i];
        t.erase("id");
        for (ojson& x : t["inputs"]) x = buf(x);
        for (ojson& x : t["outputs"]) x = buf(x);
        t["out_counter"] = ckey.at(t["out_counter"].get<size_t>());
        for (ojson& w : t["waits"]) w["counter"] = ckey.at(w["counter"].get<size_t>());
        m[tkey[i]] = std::move(t);
      }
      out[k] = std::move(m);
    } else if (k == "pages" && v.is_object() && v.contains("buffer_to_page")) {
      ojson pg = v;
      ojson b2p = ojson::object();
      for (const auto& [id, page] : v["buffer_to_page"].items())
        b2p[bname.at(std::stoul(id))] = page;
      pg["buffer_to_page"] = std::move(b2p);
      out[k] = std::move(pg);
    } else {
      out[k] = v;
    }
  }
  return out;
}

// The keyed form back as a program document with dense ids.
ir::Result<ojson> unkeyed(const ojson& k) {
  std::map<std::string, size_t> bid, cid;
  ojson out = ojson::object();
  // Buffers and counters: the keyed entries as a list with ids, and each key's new id.
  auto listed = [](const ojson& entries, std::map<std::string, size_t>& ids) {
    ojson list = ojson::array();
    for (const auto& [name, e] : entries.items()) {
      ojson x = ojson::object();
      x["id"] = list.size();
      for (const auto& [f, y] : e.items()) x[f] = y;
      ids[name] = list.size();
      list.push_back(std::move(x));
    }
    return list;
  };
  for (const auto& [key, v] : k.items())
    out[key] = key == "buffers" ? listed(v, bid) : key == "counters" ? listed(v, cid) : v;
  auto id_of = [](const std::map<std::string, size_t>& ids, const ojson& name, const char* what,
                  const std::string& where) -> ir::Result<size_t> {
    const auto it = name.is_string() ? ids.find(name.get<std::string>()) : ids.end();
    if (it == ids.end())
      return ir::error("merge.conflict", fmt::format("{} refers to {} {} that the merge removed",
                                                     where, what, compact(&name)));
    return it->second;
  };
  if (k.contains("tasks")) {
    ojson list = ojson::array();
    for (const auto& [label, t] : k["tasks"].items()) {
      ojson x = ojson::object();
      x["id"] = list.size();
      const std::string where = "task " + label;
      for (const auto& [f, y] : t.items()) {
        ojson v = y;
        if (f == "inputs" || f == "outputs") {
          for (ojson& n : v) {
            auto id = id_of(bid, n, "buffer", where);
            if (!id) return std::move(id.diagnostics);
            n = *id;
          }
        } else if (f == "out_counter") {
          auto id = id_of(cid, v, "counter", where);
          if (!id) return std::move(id.diagnostics);
          v = *id;
        } else if (f == "waits") {
          for (ojson& w : v) {
            auto id = id_of(cid, w["counter"], "counter", where);
            if (!id) return std::move(id.diagnostics);
            w["counter"] = *id;
          }
        }
        x[f] = std::move(v);
      }
      list.push_back(std::move(x));
    }
    out["tasks"] = std::move(list);
  }
  if (k.contains("pages") && k["pages"].is_object() && k["pages"].contains("buffer_to_page")) {
    ojson b2p = ojson::object();
    for (const auto& [name, page] : k["pages"]["buffer_to_page"].items()) {
      auto id = id_of(bid, ojson(name), "buffer", "the page allocation");
      if (!id) return std::move(id.diagnostics);
      b2p[std::to_string(*id)] = page;
    }
    out["pages"]["buffer_to_page"] = std::move(b2p);
  }
  return out;
}

// The three sides read by `read` and merged: the merged document, or the reading errors or the
// conflicts.
template <class Read>
ir::Result<ojson> merge_sides(std::string_view base, std::string_view ours, std::string_view theirs,
                              Read read) {
  ir::Result<ojson> b = read(base, "base"), o = read(ours, "ours"), t = read(theirs, "theirs");
  for (const auto* r : {&b, &o, &t})
    if (!*r) return r->diagnostics;
  ir::Diagnostics conflicts;
  ojson merged;
  merge3(&*b, &*o, &*t, "", merged, conflicts);
  if (!conflicts.empty()) return conflicts;
  return merged;
}

}  // namespace

ir::Result<std::string> merge_config_texts(std::string_view base, std::string_view ours,
                                           std::string_view theirs) {
  ir::Result<ojson> merged = merge_sides(base, ours, theirs, parse);
  if (!merged) return merged.diagnostics;
  const std::string text = ir::json_line(*merged);  // exact: dump_text would replace a surrogate
  ir::Result<ir::ScheduleConfig> c = lower::parse_config(text, "the merged config");
  if (!c) return c.diagnostics;  // each side's knobs are fine, but not together
  std::string out;  // the knobs the files set (not the defaults they inherit), canonically
  ir::append_json_value(out, *merged, 0);
  return out + "\n";
}

ir::Result<std::string> merge_program_texts(std::string_view base, std::string_view ours,
                                            std::string_view theirs) {
  ir::Result<ojson> merged = merge_sides(base, ours, theirs, keyed);
  if (!merged) return merged.diagnostics;
  ir::Result<ojson> doc = unkeyed(*merged);
  if (!doc) return doc.diagnostics;
  ir::Result<ir::Program> p = ir::parse_program(ir::json_line(*doc));  // exact, as above
  if (!p) return p.diagnostics;
  validate::Result v = validate::validate(*p);
  if (!v.ok) {
    ir::Diagnostics d{
        ir::error("merge.unsafe",
                  "each side is fine alone, but the merged program is rejected by the "
                  "validator; nothing was written")};
    d.insert(d.end(), v.errors.begin(), v.errors.end());
    return d;
  }
  return ir::write_program(*p);
}

}  // namespace amk::app
