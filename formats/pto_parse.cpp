// PTO deps.json and scope_stats.jsonl as their files hold them.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "formats/pto.h"

namespace amk::formats::pto {
namespace {

struct Named {
  std::string_view name;
  int64_t bytes;
  ir::DType dtype;
};
// simpler src/common/task_interface/data_type.h: names and element sizes.
constexpr Named kTypes[] = {
    {"FLOAT32", 4, ir::DType::F32},      {"FLOAT16", 2, ir::DType::F16},
    {"INT32", 4, ir::DType::I32},        {"INT16", 2, ir::DType::F16},
    {"INT8", 1, ir::DType::I8},          {"UINT8", 1, ir::DType::U8},
    {"BFLOAT16", 2, ir::DType::BF16},    {"INT64", 8, ir::DType::I32},
    {"UINT64", 8, ir::DType::I32},       {"UINT16", 2, ir::DType::F16},
    {"UINT32", 4, ir::DType::I32},       {"BOOL", 1, ir::DType::BOOL},
    {"FP8E4M3FN", 1, ir::DType::F8E4M3}, {"FP8E8M0", 1, ir::DType::U8},
    {"FP4E2M1", 1, ir::DType::U8},
};

// A schema-driven object: each known key's reader, required keys checked at the end.
struct Field {
  std::string_view key;
  bool required;
  std::function<void()> read;
};

void object(ir::JsonCursor& c, std::string_view what, std::initializer_list<Field> fields) {
  const size_t at = c.offset();
  if (!c.begin_object(what)) return;
  uint64_t seen = 0;
  std::string_view key;
  while (c.next_key(key)) {
    size_t k = 0;
    while (k < fields.size() && fields.begin()[k].key != key) ++k;
    if (k == fields.size()) {
      c.warn("pto.unknown-field", fmt::format("'{}' is not a field of {} (ignored)", key, what),
             c.offset());
      c.skip();
      continue;
    }
    seen |= uint64_t{1} << k;
    fields.begin()[k].read();
  }
  for (size_t k = 0; k < fields.size(); ++k)
    if (fields.begin()[k].required && !(seen >> k & 1u))
      c.error_at("json.missing-field",
                 fmt::format("{} is missing the required field '{}'", what, fields.begin()[k].key),
                 c.pointer(), at);
}

template <class T, class F>
void list(ir::JsonCursor& c, std::vector<T>& out, F read) {
  if (!c.begin_array("an array")) return;
  while (c.next_element()) {
    out.emplace_back();
    out.back().at = c.offset();
    read(out.back());
  }
}

void arg(ir::JsonCursor& c, Arg& a) {
  object(c, "an argument",
         {{"idx", true, [&] { (void)c.integer(a.idx, 0, INT32_MAX); }},
          {"type", true, [&] { (void)c.string(a.type); }},
          {"tensor_id", false, [&] { a.has_tensor = c.decimal_string(a.tensor_id); }},
          {"dtype", false, [&] { (void)c.string(a.dtype); }},
          {"shape", false, [&] { (void)c.int_list(a.shape, 0, UINT32_MAX); }},
          {"start_offset", false, [&] { (void)c.decimal_string(a.start_offset); }},
          {"strides", false, [&] { (void)c.int_list(a.strides, 0, UINT32_MAX); }}});
}

void task(ir::JsonCursor& c, Task& t) {
  object(c, "a task",
         {{"task_id", true, [&] { (void)c.decimal_string(t.task_id); }},
          {"scope", false, [&] { (void)c.string(t.scope); }},
          {"early_dispatch", false, [&] { (void)c.boolean(t.early_dispatch); }},
          {"kernel_ids", false,
           [&] {
             std::vector<int64_t> k;
             const size_t at = c.offset();
             if (!c.int_list(k, INT32_MIN, INT32_MAX)) return;
             if (k.size() != 3) {
               c.error("pto.kernel-ids",
                       fmt::format("kernel_ids has {} entries, not 3 (aic, aiv0, aiv1)", k.size()),
                       at);
               return;
             }
             std::copy(k.begin(), k.end(), t.kernel_ids.begin());
           }},
          {"block_num", false, [&] { (void)c.integer(t.block_num, 0, INT32_MAX); }},
          {"args", true, [&] { list(c, t.args, [&](Arg& a) { arg(c, a); }); }}});
}

void tensor(ir::JsonCursor& c, Tensor& t) {
  object(c, "a tensor",
         {{"tensor_id", true, [&] { (void)c.decimal_string(t.tensor_id); }},
          {"buffer_addr", true, [&] { (void)c.decimal_string(t.buffer_addr); }},
          {"version", false, [&] { (void)c.integer(t.version, INT32_MIN, INT32_MAX); }},
          {"dtype", true, [&] { (void)c.string(t.dtype); }},
          {"buffer_numel", true, [&] { (void)c.decimal_string(t.buffer_numel); }}});
}

void edge(ir::JsonCursor& c, Edge& e) {
  auto u32s = [&](std::vector<int64_t>& v) { (void)c.int_list(v, 0, UINT32_MAX); };
  object(
      c, "an edge",
      {{"pred", true, [&] { (void)c.decimal_string(e.pred); }},
       {"succ", true, [&] { (void)c.decimal_string(e.succ); }},
       {"arg", false, [&] { (void)c.integer(e.arg, -1, INT32_MAX); }},
       {"source", true, [&] { (void)c.string(e.source); }},
       {"flags", false,
        [&] {
          if (!c.begin_array("an array of strings")) return;
          while (c.next_element()) {
            std::string f;
            if (c.string(f)) e.flags.push_back(std::move(f));
          }
        }},
       {"overlap", false, [&] { (void)c.string(e.overlap); }},
       {"tensor_id", false, [&] { e.has_tensor = c.decimal_string(e.tensor_id); }},
       {"consumer_dtype", false, [&] { (void)c.string(e.consumer_dtype); }},
       {"consumer_shape", false, [&] { u32s(e.consumer_shape); }},
       {"consumer_start_offset", false, [&] { (void)c.decimal_string(e.consumer_start_offset); }},
       {"consumer_strides", false, [&] { u32s(e.consumer_strides); }},
       {"producer_shape", false,
        [&] {
          e.has_producer = true;
          u32s(e.producer_shape);
        }},
       {"producer_start_offset", false, [&] { (void)c.decimal_string(e.producer_start_offset); }},
       {"producer_strides", false, [&] { u32s(e.producer_strides); }}});
}

void header(ir::JsonCursor& c, ScopeStats& s) {
  auto ints = [&](std::vector<int64_t>& v) { (void)c.int_list(v, 0, INT64_MAX); };
  object(c, "the scope_stats metadata line",
         {{"version", true, [&] { (void)c.integer(s.version, 0, INT32_MAX); }},
          {"fatal", false, [&] { (void)c.boolean(s.fatal); }},
          {"dropped", false, [&] { (void)c.integer(s.dropped, 0, INT64_MAX); }},
          {"total", false, [&] { (void)c.integer(s.total, 0, INT64_MAX); }},
          {"task_window_max", true, [&] { ints(s.task_window_max); }},
          {"heap_max", true, [&] { ints(s.heap_max); }},
          {"dep_pool_max", true, [&] { ints(s.dep_pool_max); }},
          {"tensormap_max", false, [&] { (void)c.integer(s.tensormap_max, 0, INT64_MAX); }}});
}

void sample(ir::JsonCursor& c, ScopeSample& s) {
  auto num = [&](int64_t& v) { (void)c.integer(v, 0, INT64_MAX); };
  object(c, "a scope sample",
         {{"site", false, [&] { (void)c.string(s.site); }},
          {"phase", true, [&] { (void)c.string(s.phase); }},
          {"depth", true, [&] { num(s.depth); }},
          {"ring", true, [&] { num(s.ring); }},
          {"task_window_start", false, [&] { num(s.task_window_start); }},
          {"task_window_end", true, [&] { num(s.task_window_end); }},
          {"heap_start", false, [&] { num(s.heap_start); }},
          {"heap_end", false, [&] { num(s.heap_end); }},
          {"dep_pool_start", false, [&] { num(s.dep_pool_start); }},
          {"dep_pool_end", false, [&] { num(s.dep_pool_end); }},
          {"tensormap", false, [&] { num(s.tensormap); }}});
}

}  // namespace

ir::Diagnostics parse_deps(std::string_view text, Deps& d) {
  ir::JsonCursor c(text);
  return c.document("a PTO dependency dump (deps.json)", [&] {
    object(c, "a PTO dependency dump",
           {{"tasks", true, [&] { list(c, d.tasks, [&](Task& t) { task(c, t); }); }},
            {"tensors", true, [&] { list(c, d.tensors, [&](Tensor& t) { tensor(c, t); }); }},
            {"edges", true, [&] { list(c, d.edges, [&](Edge& e) { edge(c, e); }); }}});
  });
}

ir::Diagnostics parse_scope_stats(std::string_view text, ScopeStats& s) {
  ir::Diagnostics out;
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view row = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line;
    if (row.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ir::JsonCursor c(row);
    ir::Diagnostics d;
    if (!s.has_header) {
      d = c.document("the scope_stats metadata line", [&] { header(c, s); });
      s.has_header = !ir::has_errors(d);
    } else {
      ScopeSample smp;
      smp.line = line;
      d = c.document("a scope_stats sample", [&] { sample(c, smp); });
      if (!ir::has_errors(d)) s.samples.push_back(std::move(smp));
    }
    for (ir::Diagnostic& x : d) x.line = line;  // the column stays the one within the line
    ir::append(out, std::move(d));
    if (ir::count_errors(out) >= 100) break;
  }
  if (!s.has_header && !ir::has_errors(out))
    out.push_back(ir::error("pto.scope-stats", "scope_stats.jsonl has no metadata line"));
  return out;
}

bool elem_type(std::string_view dtype, detail::ElemType& out) {
  for (const Named& n : kTypes)
    if (n.name == dtype) {
      out.dtype = n.dtype;
      out.bits = n.bytes * 8;
      return true;
    }
  return false;
}

int64_t elem_bytes(std::string_view dtype) {
  for (const Named& n : kTypes)
    if (n.name == dtype) return n.bytes;
  return 0;
}

std::string_view dtype_name(ir::DType d) {
  switch (d) {
    case ir::DType::F32:
      return "FLOAT32";
    case ir::DType::F16:
      return "FLOAT16";
    case ir::DType::BF16:
      return "BFLOAT16";
    case ir::DType::I32:
      return "INT32";
    case ir::DType::I8:
      return "INT8";
    case ir::DType::BOOL:
      return "BOOL";
    case ir::DType::F8E4M3:
    case ir::DType::F8E5M2:
      return "FP8E4M3FN";
    case ir::DType::U8:
    case ir::DType::I4:
      return "UINT8";
  }
  return "UINT8";
}

}  // namespace amk::formats::pto
