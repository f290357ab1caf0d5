// PTO deps.json and scope_stats.jsonl as their files hold them.
#include <algorithm>
#include <array>
#include <iterator>

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

// deps.json and scope_stats.jsonl as the collectors write them: each key's value with its type
// and range, an unknown key a warning.
class Parser : public ir::JsonCursor {
 public:
  using JsonCursor::JsonCursor;

  // Takes what the reader of a piece of the tasks stored (ir/json_read_parallel.h).
  void adopt(Parser& piece) { store_.adopt(std::move(piece.store_)); }

  void deps(Deps& d) {
    static constexpr Field kFields[] = {{"tasks"}, {"tensors"}, {"edges"}};
    object("a PTO dependency dump", nullptr, kFields, [&](size_t k) {
      if (k == 0) {
        records<Parser>(d.tasks, "tasks", [](Parser& p, Task& t) { p.task(t); });
      } else if (k == 1) {
        records<Parser>(d.tensors, "tensors", [](Parser& p, Tensor& t) { p.tensor(t); });
      } else {
        records<Parser>(d.edges, "edges", [](Parser& p, Edge& e) { p.edge(e); });
      }
    });
  }
  // Gives `to` what the tasks read so far point into.
  void keep_store(ArgStore& to) { to.adopt(std::move(store_)); }

  void header(ScopeStats& s) {
    auto ints = [&](std::vector<int64_t>& v) { (void)int_list(v, 0, INT64_MAX); };
    static constexpr Field kFields[] = {
        {"version"},         {"fatal", false}, {"dropped", false}, {"total", false},
        {"task_window_max"}, {"heap_max"},     {"dep_pool_max"},   {"tensormap_max", false}};
    object("the scope_stats metadata line", nullptr, kFields, [&](size_t k) {
      switch (k) {
        case 0:
          return (void)integer(s.version, 0, INT32_MAX);
        case 1:
          return (void)boolean(s.fatal);
        case 2:
          return (void)integer(s.dropped, 0, INT64_MAX);
        case 3:
          return (void)integer(s.total, 0, INT64_MAX);
        case 4:
          return ints(s.task_window_max);
        case 5:
          return ints(s.heap_max);
        case 6:
          return ints(s.dep_pool_max);
        default:
          return (void)integer(s.tensormap_max, 0, INT64_MAX);
      }
    });
  }

  void sample(ScopeSample& s) {
    static constexpr Field kFields[] = {{"site", false},
                                        {"phase"},
                                        {"depth"},
                                        {"ring"},
                                        {"task_window_start", false},
                                        {"task_window_end"},
                                        {"heap_start", false},
                                        {"heap_end", false},
                                        {"dep_pool_start", false},
                                        {"dep_pool_end", false},
                                        {"tensormap", false}};
    int64_t* const nums[] = {nullptr,
                             nullptr,
                             &s.depth,
                             &s.ring,
                             &s.task_window_start,
                             &s.task_window_end,
                             &s.heap_start,
                             &s.heap_end,
                             &s.dep_pool_start,
                             &s.dep_pool_end,
                             &s.tensormap};
    object("a scope sample", nullptr, kFields, [&](size_t k) {
      if (k == 0) return (void)string(s.site);
      if (k == 1) return (void)string(s.phase);
      (void)integer(*nums[k], 0, INT64_MAX);
    });
  }

 private:
  ir::detail::KeyMemo task_keys_, arg_keys_, tensor_keys_, edge_keys_;
  std::vector<Arg> args_;         // the task's, while it is read
  std::vector<int64_t> extents_;  // its args' shapes and strides, while it is read
  ArgStore store_;                // the tasks' args and extents once read

  // A record of `fields` (what: "a task"), an unknown key a warning; nullopt when not an object.
  template <size_t N, class Read>
  std::optional<uint64_t> object(std::string_view what, ir::detail::KeyMemo* memo,
                                 const Field (&fields)[N], Read read) {
    return record(what, what, memo, fields, read, [&](std::string_view key) {
      warn("pto.unknown-field", fmt::format("'{}' is not a field of {} (ignored)", key, what),
           offset());
      skip();
    });
  }

  // An argument of a task whose shapes and strides go to extents_.
  void arg(Arg& a) {
    a.at = offset();
    static constexpr Field kFields[] = {
        {"idx"},           {"type"},         {"tensor_id", false},
        {"dtype", false},  {"shape", false}, {"start_offset", false},
        {"strides", false}};
    auto extent = [&](Extent& e) {
      e.at = static_cast<uint32_t>(extents_.size());
      (void)int_list_to(0, UINT32_MAX, [&](int64_t v) { extents_.push_back(v); });
      e.n = static_cast<uint32_t>(extents_.size() - e.at);
    };
    object("an argument", &arg_keys_, kFields, [&](size_t k) {
      switch (k) {
        case 0:
          return (void)integer(a.idx, 0, INT32_MAX);
        case 1:
          return (void)raw_string(a.type);
        case 2:
          a.has_tensor = decimal_string(a.tensor_id);
          return;
        case 3:
          return (void)raw_string(a.dtype);
        case 4:
          return extent(a.shape);
        case 5:
          return (void)decimal_string(a.start_offset);
        default:
          return extent(a.strides);
      }
    });
    a.kind = arg_type(a.type);
    a.dtype_at = dtype_index(a.dtype);
  }

  // A task; its args and their extents are gathered in args_ and extents_, then kept in
  // store_.
  void task(Task& t) {
    t.at = offset();
    args_.clear();
    extents_.clear();
    static constexpr Field kFields[] = {
        {"task_id"},           {"scope", false},     {"early_dispatch", false},
        {"kernel_ids", false}, {"block_num", false}, {"args"}};
    object("a task", &task_keys_, kFields, [&](size_t k) {
      switch (k) {
        case 0:
          return (void)decimal_string(t.task_id);
        case 1:
          return (void)raw_string(t.scope);
        case 2:
          return (void)boolean(t.early_dispatch);
        case 3:
          return kernel_ids(t);
        case 4:
          return (void)integer(t.block_num, 0, INT32_MAX);
        default:
          return (void)list(args_, [&](Arg& a) { arg(a); });
      }
    });
    t.args = store_.add(std::span<const Arg>(args_));
    t.extents = store_.add(std::span<const int64_t>(extents_));
  }

  void kernel_ids(Task& t) {
    std::array<int64_t, 4> k{};
    size_t n = 0;
    const size_t at = offset();
    if (!int_list_to(INT32_MIN, INT32_MAX, [&](int64_t v) { k[std::min<size_t>(n++, 3)] = v; }))
      return;
    if (n != 3) {
      error("pto.kernel-ids", fmt::format("kernel_ids has {} entries, not 3 (aic, aiv0, aiv1)", n),
            at);
      return;
    }
    std::copy(k.begin(), k.begin() + 3, t.kernel_ids.begin());
  }

  void tensor(Tensor& t) {
    t.at = offset();
    static constexpr Field kFields[] = {
        {"tensor_id"}, {"buffer_addr"}, {"version", false}, {"dtype"}, {"buffer_numel"}};
    object("a tensor", &tensor_keys_, kFields, [&](size_t k) {
      switch (k) {
        case 0:
          return (void)decimal_string(t.tensor_id);
        case 1:
          return (void)decimal_string(t.buffer_addr);
        case 2:
          return (void)integer(t.version, INT32_MIN, INT32_MAX);
        case 3:
          return (void)raw_string(t.dtype);
        default:
          return (void)decimal_string(t.buffer_numel);
      }
    });
    t.dtype_at = dtype_index(t.dtype);
  }

  // An edge as the reader needs it: pred, succ, arg, source and tensor_id kept; the other fields
  // (flags, overlap, the consumer's and producer's regions) checked, not kept.
  void edge(Edge& e) {
    e.at = offset();
    std::string_view word;
    uint64_t offset_at = 0;
    auto u32s = [&] { (void)int_list_to(0, UINT32_MAX, [](int64_t) {}); };
    static constexpr Field kFields[] = {{"pred"},
                                        {"succ"},
                                        {"arg", false},
                                        {"source"},
                                        {"flags", false},
                                        {"overlap", false},
                                        {"tensor_id", false},
                                        {"consumer_dtype", false},
                                        {"consumer_shape", false},
                                        {"consumer_start_offset", false},
                                        {"consumer_strides", false},
                                        {"producer_shape", false},
                                        {"producer_start_offset", false},
                                        {"producer_strides", false}};
    object("an edge", &edge_keys_, kFields, [&](size_t k) {
      switch (k) {
        case 0:
          return (void)decimal_string(e.pred);
        case 1:
          return (void)decimal_string(e.succ);
        case 2:
          return (void)integer(e.arg, -1, INT32_MAX);
        case 3:
          return (void)raw_string(e.source);
        case 4:
          return (void)array("an array of strings", [&] { (void)text(word); });
        case 5:
        case 7:
          return (void)text(word);
        case 6:
          e.has_tensor = decimal_string(e.tensor_id);
          return;
        case 9:
        case 12:
          return (void)decimal_string(offset_at);
        default:
          return u32s();
      }
    });
    e.creator = e.source == "creator";
  }
};

}  // namespace

ir::Diagnostics parse_deps(std::string_view text, Deps& d) {
  Parser p(text);
  ir::Diagnostics out = p.document("a PTO dependency dump (deps.json)", [&] { p.deps(d); });
  p.keep_store(d.store);  // however the read ended, d's tasks point into it
  return out;
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
    Parser c(row);
    ir::Diagnostics d;
    if (!s.has_header) {
      d = c.document("the scope_stats metadata line", [&] { c.header(s); });
      s.has_header = !ir::has_errors(d);
    } else {
      ScopeSample smp;
      smp.line = line;
      d = c.document("a scope_stats sample", [&] { c.sample(smp); });
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

int8_t dtype_index(const ir::RawString& dtype) {
  const std::string decoded = dtype.escaped ? dtype.value() : std::string();
  const std::string_view name = dtype.escaped ? std::string_view(decoded) : dtype.raw;
  for (size_t k = 0; k < std::size(kTypes); ++k)
    if (kTypes[k].name == name) return static_cast<int8_t>(k);
  return -1;
}

detail::ElemType elem_type(int8_t index) {
  const Named& n = kTypes[static_cast<size_t>(index)];
  return {n.dtype, n.bytes * 8};
}

int64_t elem_bytes(int8_t index) {
  return kTypes[static_cast<size_t>(index)].bytes;
}

ArgType arg_type(const ir::RawString& type) {
  if (type == "INPUT") return ArgType::Input;
  if (type == "OUTPUT_EXISTING") return ArgType::OutputExisting;
  if (type == "INOUT") return ArgType::Inout;
  if (type == "OUTPUT") return ArgType::Output;
  return ArgType::Unknown;
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
