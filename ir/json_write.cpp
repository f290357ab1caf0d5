// Canonical writer: the bytes of AMK's MegakernelProgram.to_json() (json.dumps(indent=2)), with
// unknown fields kept after the known ones.
#include <charconv>
#include <span>
#include <type_traits>
#include <variant>

#include <nlohmann/json.hpp>

#include "ir/json_io.h"
#include "ir/pyjson.h"
#include "ir/schema.h"

namespace amk::ir {
namespace {

// Streams one JSON object in json.dumps(indent=2) layout.
class Obj {
 public:
  Obj(std::string& out, int level) : out_(out), level_(level) { out_ += '{'; }
  std::string& key(std::string_view k) {
    if (!first_) out_ += ',';
    first_ = false;
    append_indent(out_, level_ + 1);
    append_json_string(out_, k);
    out_ += ": ";
    return out_;
  }
  int inner() const { return level_ + 1; }
  void extras(const JsonValue& extra) {
    const auto& j = extra.json();
    if (!j.is_object()) return;
    for (auto it = j.begin(); it != j.end(); ++it)
      append_json_value(key(it.key()), it.value(), inner());
  }
  void close() {
    if (first_) {
      out_ += '}';
      return;
    }
    append_indent(out_, level_);
    out_ += '}';
  }

 private:
  std::string& out_;
  int level_;
  bool first_ = true;
};

void put_int(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void put_number(std::string& out, const Number& n) {
  if (n.is_int) {
    put_int(out, n.i);
  } else {
    append_py_float(out, n.f);
  }
}

template <typename T, typename F>
void put_list(std::string& out, const std::vector<T>& v, int level, F each) {
  if (v.empty()) {
    out += "[]";
    return;
  }
  out += '[';
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    append_indent(out, level + 1);
    each(out, v[i], i, level + 1);
  }
  append_indent(out, level);
  out += ']';
}

void put_int_list(std::string& out, const std::vector<int64_t>& v, int level) {
  put_list(out, v, level, [](std::string& o, int64_t x, size_t, int) { put_int(o, x); });
}

void put_bool(std::string& out, bool b) {
  out += b ? "true" : "false";
}

// Writes each field of `fields` of a record in table order, then its unknown fields.
template <class R>
void put_record(std::string& out, const R& r, std::span<const Field<R>> fields, int level) {
  Obj o(out, level);
  for (const Field<R>& f : fields)
    std::visit(
        [&](auto m) {
          std::string& at = o.key(f.name);
          using V = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<V, std::string>) {
            append_json_string(at, r.*m);
          } else if constexpr (std::is_same_v<V, Number>) {
            put_number(at, r.*m);
          } else if constexpr (std::is_same_v<V, bool>) {
            put_bool(at, r.*m);
          } else {
            append_json_value(at, (r.*m).json(), o.inner());
          }
        },
        f.member);
  o.extras(r.extra);
  o.close();
}

void put_target(std::string& out, const Target& t, int level) {
  put_record(out, t, target_fields(), level);
}

void put_param(std::string& out, const ParamValue& v, int level) {
  switch (v.kind) {
    case ParamValue::Kind::Int:
      put_int(out, v.i);
      return;
    case ParamValue::Kind::Float:
      append_py_float(out, v.f);
      return;
    case ParamValue::Kind::Bool:
      put_bool(out, v.i != 0);
      return;
    case ParamValue::Kind::Other:
      append_json_value(out, v.other.json(), level);
      return;
  }
}

void put_task(std::string& out, const Task& t, size_t id, int level) {
  Obj o(out, level);
  put_int(o.key("id"), static_cast<int64_t>(id));
  append_json_string(o.key("op"), name(t.op));
  put_int_list(o.key("inputs"), t.inputs, o.inner());
  put_int_list(o.key("outputs"), t.outputs, o.inner());
  put_int(o.key("out_counter"), t.out_counter);
  std::string& w = o.key("waits");
  if (t.waits.empty()) {
    w += "[]";
  } else {
    w += '[';
    for (size_t i = 0; i < t.waits.size(); ++i) {
      if (i) w += ',';
      append_indent(w, o.inner() + 1);
      Obj wo(w, o.inner() + 1);
      put_int(wo.key("counter"), t.waits[i].counter);
      put_int(wo.key("threshold"), t.waits[i].threshold);
      wo.extras(t.waits[i].extra);
      wo.close();
    }
    append_indent(w, o.inner());
    w += ']';
  }
  {
    std::string& pout = o.key("params");
    Obj po(pout, o.inner());
    for (const Param& p : t.params) put_param(po.key(p.key), p.value, po.inner());
    po.close();
  }
  if (t.sm) {
    put_int(o.key("sm"), *t.sm);
  } else {
    o.key("sm") += "null";
  }
  put_int(o.key("est_bytes"), t.est_bytes);
  put_int(o.key("est_flops"), t.est_flops);
  append_json_string(o.key("label"), t.label);
  o.extras(t.extra);
  o.close();
}

void put_pages(std::string& out, const PageAllocation& a, int level) {
  Obj o(out, level);
  {
    std::string& m = o.key("buffer_to_page");
    Obj mo(m, o.inner());
    for (const auto& [bid, pid] : a.buffer_to_page) put_int(mo.key(std::to_string(bid)), pid);
    mo.close();
  }
  std::string& l = o.key("pages");
  if (a.pages.empty()) {
    l += "[]";
  } else {
    l += '[';
    for (size_t i = 0; i < a.pages.size(); ++i) {
      if (i) l += ',';
      append_indent(l, o.inner() + 1);
      const Page& pg = a.pages[i];
      Obj po(l, o.inner() + 1);
      put_int(po.key("id"), static_cast<int64_t>(i));
      append_json_string(po.key("space"), name(pg.space));
      put_int(po.key("nbytes"), pg.nbytes);
      put_int(po.key("live_start"), pg.live_start);
      put_int(po.key("live_end"), pg.live_end);
      po.extras(pg.extra);
      po.close();
    }
    append_indent(l, o.inner());
    l += ']';
  }
  o.extras(a.extra);
  o.close();
}

void put_config(std::string& out, const ScheduleConfig& c, int level) {
  put_record(out, c, config_fields(), level);
}

void put_buffer(std::string& out, const Buffer& b, size_t id, int level) {
  Obj o(out, level);
  put_int(o.key("id"), static_cast<int64_t>(id));
  append_json_string(o.key("name"), b.name);
  append_json_string(o.key("kind"), name(b.kind));
  append_json_string(o.key("dtype"), name(b.dtype));
  put_int_list(o.key("shape"), b.shape, o.inner());
  append_json_string(o.key("space"), name(b.space));
  if (b.source) {
    append_json_string(o.key("source"), *b.source);
  } else {
    o.key("source") += "null";
  }
  o.extras(b.extra);
  o.close();
}

void put_counter(std::string& out, const Counter& c, size_t id, int level) {
  Obj o(out, level);
  put_int(o.key("id"), static_cast<int64_t>(id));
  put_int(o.key("init"), c.init);
  append_json_string(o.key("note"), c.note);
  o.extras(c.extra);
  o.close();
}

}  // namespace

std::string write_target(const Target& t) {
  std::string out;
  put_target(out, t, 0);
  return out;
}

std::string write_program(const Program& p) {
  std::string out;
  out.reserve(256 + 260 * p.buffers.size() + 560 * p.tasks.size() + 80 * p.counters.size());
  Obj o(out, 0);
  append_json_string(o.key("ir_version"), p.ir_version);
  append_json_string(o.key("abi_version"), p.abi_version);
  append_json_value(o.key("meta"), p.meta.json(), 1);
  if (p.target) {
    put_target(o.key("target"), *p.target, 1);
  } else {
    o.key("target") += "null";
  }
  put_list(o.key("buffers"), p.buffers, 1, put_buffer);
  put_list(o.key("counters"), p.counters, 1, put_counter);
  put_list(o.key("tasks"), p.tasks, 1, put_task);
  if (p.pages) {
    put_pages(o.key("pages"), *p.pages, 1);
  } else {
    o.key("pages") += "null";
  }
  if (p.config) {
    put_config(o.key("config"), *p.config, 1);
  } else {
    o.key("config") += "null";
  }
  o.extras(p.extra);
  if (p.runtime) append_json_value(o.key("runtime"), runtime_json(*p.runtime).json(), 1);
  o.close();
  return out;
}

// A record's fields as one JSON object in table order, its unknown fields after.
template <class R>
JsonValue record_json(const R& r, std::span<const Field<R>> fields) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Field<R>& f : fields)
    std::visit(
        [&](auto m) {
          using V = std::remove_cvref_t<decltype(r.*m)>;
          nlohmann::ordered_json& at = j[std::string(f.name)];
          if constexpr (std::is_same_v<V, Number>) {
            at =
                (r.*m).is_int ? nlohmann::ordered_json((r.*m).i) : nlohmann::ordered_json((r.*m).f);
          } else if constexpr (std::is_same_v<V, JsonValue>) {
            at = (r.*m).json();
          } else {
            at = r.*m;
          }
        },
        f.member);
  if (r.extra.json().is_object())
    for (auto it = r.extra.json().begin(); it != r.extra.json().end(); ++it)
      j[it.key()] = it.value();
  return JsonValue(std::move(j));
}

JsonValue config_json(const ScheduleConfig& c) {
  return record_json(c, config_fields());
}

JsonValue target_json(const Target& t) {
  return record_json(t, target_fields());
}

std::string config_key(const ScheduleConfig& c) {
  return dump_text(config_json(c).json());
}

uint64_t config_hash(std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : key) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string write_config(const ScheduleConfig& c) {
  std::string out;
  put_config(out, c, 0);
  return out;
}

}  // namespace amk::ir
