// A schema-driven pull parser for AMK program JSON. It reads straight into the data model (no DOM)
// and turns every problem into a diagnostic with a JSON pointer and a line/column; the generic
// parsing is ir/json_reader.h, the parallel read of big arrays ir/json_read_parallel.h.
#include <algorithm>
#include <atomic>
#include <iterator>
#include <new>
#include <stdexcept>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/json_read_parallel.h"
#include "ir/json_reader.h"
#include "ir/parallel.h"

namespace amk::ir {
namespace {

using detail::is;
using detail::JsonReader;
using detail::KeyMemo;
using detail::Lexer;
using detail::NumTok;
using detail::ojson;
using detail::SyntaxError;

// The JSON names of an enum's values, as ir/types.cpp names them: "A, B, C"; with more than
// `shown` values, the first three and the last two around "...".
template <class E>
std::string enum_choices(int count, int shown = 32) {
  std::string s;
  for (int i = 0; i < count; ++i) {
    if (count > shown && i == 3) {
      s += ", ...";
      i = count - 3;
      continue;
    }
    if (i) s += ", ";
    s += name(static_cast<E>(i));
  }
  return s;
}

// The reader of AMK's records: programs and their buffers, counters, tasks, waits, params and
// pages; targets; ScheduleConfigs.
class Reader : public JsonReader {
 public:
  using JsonReader::JsonReader;

  Result<Program> run() {
    return document<Program>("a program", [&](Program& p, size_t off) { read_program(p, off); });
  }

  // A lone target record (targets/*.json): AMK's fields, unknown ones kept in Target::extra.
  Result<Target> run_target() {
    return document<Target>("a target", [&](Target& t, size_t off) {
      if (read_target(t) == 0)
        error("target.empty", "a target record needs AMK's GpuTarget fields", off);
    });
  }

  // A ScheduleConfig file: the same fields as a program's config; with `strict`, an unknown
  // field is an error (a program keeps it in extra, as AMK's loader drops it).
  Result<ScheduleConfig> run_config(bool strict) {
    strict_config_ = strict;
    return document<ScheduleConfig>("a ScheduleConfig",
                                    [&](ScheduleConfig& c, size_t) { (void)read_config(c); });
  }

 private:
  void read_program(Program& p, size_t doc_off) {
    bool have_ir = false, have_abi = false, have_buffers = false, have_counters = false,
         have_tasks = false;
    size_t ir_off = 0, abi_off = 0;
    read_object("an object", &p.extra, nullptr, [&](std::string_view k) {
      if (is(k, "ir_version")) {
        ir_off = lx_.offset();
        have_ir = read_version(p.ir_version);
        return 0;
      }
      if (is(k, "abi_version")) {
        abi_off = lx_.offset();
        have_abi = read_version(p.abi_version);
        return 1;
      }
      if (is(k, "meta")) {
        p.meta = JsonValue(verbatim(1, true));
        return 2;
      }
      if (is(k, "target")) {
        read_optional_record(p.target, "target", [&](Target& t) { return read_target(t); });
        return 3;
      }
      if (is(k, "buffers")) {
        have_buffers = true;
        read_records<Reader>(
            p.buffers, "buffers", [](Reader& r, Buffer& b) { r.read_buffer(b, kAnyIndex); },
            [&](Buffer& b, size_t i) { read_buffer(b, i); });
        return 4;
      }
      if (is(k, "counters")) {
        have_counters = true;
        read_records<Reader>(
            p.counters, "counters", [](Reader& r, Counter& c) { r.read_counter(c, kAnyIndex); },
            [&](Counter& c, size_t i) { read_counter(c, i); });
        return 5;
      }
      if (is(k, "tasks")) {
        have_tasks = true;
        read_records<Reader>(
            p.tasks, "tasks", [](Reader& r, Task& t) { r.read_task(t, kAnyIndex); },
            [&](Task& t, size_t i) { read_task(t, i); });
        return 6;
      }
      if (is(k, "pages")) {
        read_optional_record(p.pages, "pages", [&](PageAllocation& a) { return read_pages(a); });
        return 7;
      }
      if (is(k, "config")) {
        read_optional_record(p.config, "config", [&](ScheduleConfig& c) { return read_config(c); });
        return 8;
      }
      return -1;
    });
    check_major("ir_version", "IR", p.ir_version, kIrVersion, have_ir, ir_off);
    check_major("abi_version", "ABI", p.abi_version, kAbiVersion, have_abi, abi_off);
    check_records(have_buffers, have_counters, have_tasks, doc_off);
  }

  // AMK writes "buffers", "counters" and "tasks" in every program (to_dict): a document without
  // them is some other JSON file (a package manifest, a model spec), not an empty program.
  void check_records(bool buffers, bool counters, bool tasks, size_t off) {
    std::vector<std::string_view> absent;
    for (auto [have, name] :
         {std::pair{buffers, "buffers"}, {counters, "counters"}, {tasks, "tasks"}})
      if (!have) absent.push_back(name);
    if (absent.empty()) return;
    std::string list;
    for (size_t i = 0; i < absent.size(); ++i)
      list += fmt::format("{}'{}'",
                          i == 0                   ? ""
                          : i + 1 == absent.size() ? " or "
                                                   : ", ",
                          absent[i]);
    error("ir.not-a-program",
          fmt::format("not a program: it has no {} (every program has 'buffers', 'counters' and "
                      "'tasks' lists)",
                      list),
          off);
  }

  // AMK: str(d.get("ir_version", IR_VERSION)); strings and numbers survive, the rest mismatch.
  bool read_version(std::string& out) {
    ojson v = verbatim(1, true);
    if (v.is_string()) {
      out = v.get<std::string>();
    } else {
      out = py_repr(v);  // Python's str() of a number, None, bool, list or dict is its repr
    }
    return true;
  }

  void check_major(std::string_view key, std::string_view which, const std::string& ver,
                   std::string_view runtime, bool have, size_t off) {
    if (!have) return;
    auto major = [](std::string_view s) { return s.substr(0, s.find('.')); };
    if (major(ver) != major(runtime)) {
      push(key);
      error("ir.version",
            fmt::format("{} major version mismatch: file {} vs runtime {}", which, ver, runtime),
            off);
      pop();
    }
  }

  // Returns 1 when a non-empty object was read, 0 for {} (absent).
  int read_target(Target& t) {
    size_t off = lx_.offset();
    const std::span<const Field<Target>> fields = target_fields();
    uint32_t seen = 0;
    int n = 0;
    read_object("an object", &t.extra, nullptr, [&](std::string_view k) {
      ++n;
      for (size_t f = 0; f < fields.size(); ++f) {
        if (k != fields[f].name) continue;
        seen |= 1u << f;
        read_field(t, fields[f].member);
        return static_cast<int>(f);
      }
      return -1;
    });
    if (n == 0) return 0;
    for (size_t f = 0; f < fields.size(); ++f)
      if (fields[f].required && !(seen & (1u << f))) missing("target", fields[f].name, off);
    return 1;
  }

  void read_buffer(Buffer& b, size_t index) {
    size_t off = lx_.offset();
    bool have_id = false, bad_id = false;
    int64_t id = -1;
    unsigned req = 0;
    read_object("a buffer object", &b.extra, &buffer_keys_, [&](std::string_view k) {
      if (is(k, "id")) {
        have_id = true;
        bad_id = !read_int(id);
        return 0;
      }
      if (is(k, "name")) {
        req |= 1;
        read_str(b.name);
        return 1;
      }
      if (is(k, "kind")) {
        req |= 2;
        read_enum(b.kind, parse_kind, "buffer kind", kKindChoices);
        return 2;
      }
      if (is(k, "dtype")) {
        req |= 4;
        read_enum(b.dtype, parse_dtype, "dtype", kDTypeChoices);
        return 3;
      }
      if (is(k, "shape")) {
        req |= 8;
        read_int_list(b.shape);
        return 4;
      }
      if (is(k, "space")) {
        req |= 16;
        read_enum(b.space, parse_memspace, "memory space", kSpaceChoices);
        return 5;
      }
      if (is(k, "source")) {
        read_opt_str(b.source);
        return 6;
      }
      return -1;
    });
    if (!bad_id) check_id("buffer", have_id, id, index, off);
    static constexpr std::string_view kReq[] = {"name", "kind", "dtype", "shape", "space"};
    for (int f = 0; f < 5; ++f)
      if (!(req & (1u << f))) missing("buffer", kReq[f], off);
  }

  void read_counter(Counter& c, size_t index) {
    size_t off = lx_.offset();
    bool have_id = false, bad_id = false;
    int64_t id = -1;
    read_object("a counter object", &c.extra, &counter_keys_, [&](std::string_view k) {
      if (is(k, "id")) {
        have_id = true;
        bad_id = !read_int(id);
        return 0;
      }
      if (is(k, "init")) {
        read_int(c.init);
        return 1;
      }
      if (is(k, "note")) {
        read_str(c.note);
        return 2;
      }
      return -1;
    });
    if (!bad_id) check_id("counter", have_id, id, index, off);
  }

  void read_wait(Wait& w) {
    size_t off = lx_.offset();
    bool hc = false, ht = false;
    read_object("a wait object", &w.extra, &wait_keys_, [&](std::string_view k) {
      if (is(k, "counter")) {
        hc = true;
        read_int(w.counter);
        return 0;
      }
      if (is(k, "threshold")) {
        ht = true;
        read_int(w.threshold);
        return 1;
      }
      return -1;
    });
    if (!hc) missing("wait", "counter", off);
    if (!ht) missing("wait", "threshold", off);
  }

  void read_params(std::vector<Param>& params) {
    for_each_member([&](std::string_view key, size_t voff) {
      std::string k(key);
      ParamValue v = read_param_value(voff);
      for (Param& p : params) {
        if (p.key == k) {
          warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", k),
               voff);
          p.value = std::move(v);
          return;
        }
      }
      params.push_back({std::move(k), std::move(v)});
    });
  }

  // A param's value: an int, a float or a bool as such, anything else kept verbatim.
  ParamValue read_param_value(size_t voff) {
    const int c = lx_.peek();
    if (c == '-' || (c >= '0' && c <= '9')) {
      NumTok t = lx_.number();
      check_finite(t, voff);
      if (t.kind == NumTok::Kind::Int) return ParamValue::of_int(t.i);
      if (t.kind == NumTok::Kind::Float) return ParamValue::of_float(t.d);
      error("json.int-range", fmt::format("integer {} is out of range (int64)", t.text), voff);
      return {};
    }
    if (c == 't' && lx_.literal("true")) return ParamValue::of_bool(true);
    if (c == 'f' && lx_.literal("false")) return ParamValue::of_bool(false);
    return ParamValue::of_json(JsonValue(verbatim(1, true)));
  }

  void read_task(Task& t, size_t index) {
    size_t off = lx_.offset();
    bool have_id = false, bad_id = false;
    int64_t id = -1;
    unsigned req = 0;
    read_object("a task object", &t.extra, &task_keys_, [&](std::string_view k) {
      if (is(k, "id")) {
        have_id = true;
        bad_id = !read_int(id);
        return 0;
      }
      if (is(k, "op")) {
        req |= 1;
        read_enum(t.op, parse_op, "opcode", kOpChoices);
        return 1;
      }
      if (is(k, "inputs")) {
        req |= 2;
        read_int_list(t.inputs);
        return 2;
      }
      if (is(k, "outputs")) {
        req |= 4;
        read_int_list(t.outputs);
        return 3;
      }
      if (is(k, "out_counter")) {
        req |= 8;
        read_int(t.out_counter);
        return 4;
      }
      if (is(k, "waits")) {
        wait_scratch_.clear();
        read_list(wait_scratch_, [&](Wait& w, size_t) { read_wait(w); });
        t.waits.assign(std::make_move_iterator(wait_scratch_.begin()),
                       std::make_move_iterator(wait_scratch_.end()));
        return 5;
      }
      if (is(k, "params")) {
        t.params.clear();
        read_params(t.params);
        return 6;
      }
      if (is(k, "sm")) {
        if (lx_.peek() == 'n' && lx_.literal("null")) {
          t.sm.reset();
        } else {
          int64_t v = 0;
          if (read_int(v)) t.sm = v;
        }
        return 7;
      }
      if (is(k, "est_bytes")) {
        read_int(t.est_bytes);
        return 8;
      }
      if (is(k, "est_flops")) {
        read_int(t.est_flops);
        return 9;
      }
      if (is(k, "label")) {
        read_str(t.label);
        return 10;
      }
      return -1;
    });
    if (!bad_id) check_id("task", have_id, id, index, off);
    static constexpr std::string_view kReq[] = {"op", "inputs", "outputs", "out_counter"};
    for (int f = 0; f < 4; ++f)
      if (!(req & (1u << f))) missing("task", kReq[f], off);
  }

  void read_page(Page& pg, size_t index) {
    size_t off = lx_.offset();
    bool have_id = false, bad_id = false, hs = false, hn = false;
    int64_t id = -1;
    read_object("a page object", &pg.extra, nullptr, [&](std::string_view k) {
      if (is(k, "id")) {
        have_id = true;
        bad_id = !read_int(id);
        return 0;
      }
      if (is(k, "space")) {
        hs = true;
        read_enum(pg.space, parse_memspace, "memory space", kSpaceChoices);
        return 1;
      }
      if (is(k, "nbytes")) {
        hn = true;
        read_int(pg.nbytes);
        return 2;
      }
      if (is(k, "live_start")) {
        read_int(pg.live_start);
        return 3;
      }
      if (is(k, "live_end")) {
        read_int(pg.live_end);
        return 4;
      }
      return -1;
    });
    if (!bad_id) check_id("page", have_id, id, index, off);
    if (!hs) missing("page", "space", off);
    if (!hn) missing("page", "nbytes", off);
  }

  int read_pages(PageAllocation& a) {
    size_t off = lx_.offset();
    bool hb = false, hp = false;
    int n = 0;
    read_object("an object", &a.extra, nullptr, [&](std::string_view k) {
      ++n;
      if (is(k, "buffer_to_page")) {
        hb = true;
        a.buffer_to_page.clear();
        std::unordered_map<int64_t, size_t> where;  // buffer id -> position (dict semantics)
        read_int_keyed([&](int64_t bid, size_t voff) {
          int64_t pid = 0;
          if (!read_int(pid)) return;
          auto [it, fresh] = where.try_emplace(bid, a.buffer_to_page.size());
          if (!fresh) {
            warn("json.duplicate-key",
                 fmt::format("buffer {} appears twice in buffer_to_page (the last one wins)", bid),
                 voff);
            a.buffer_to_page[it->second].second = pid;
            return;
          }
          a.buffer_to_page.emplace_back(bid, pid);
        });
        return 0;
      }
      if (is(k, "pages")) {
        hp = true;
        a.pages.clear();
        read_list(a.pages, [&](Page& pg, size_t i) { read_page(pg, i); });
        return 1;
      }
      return -1;
    });
    if (n == 0) return 0;
    if (!hb) missing("pages", "buffer_to_page", off);
    if (!hp) missing("pages", "pages", off);
    return 1;
  }

  int read_config(ScheduleConfig& c) {
    c = ScheduleConfig::defaults();
    int n = 0;
    const std::span<const Field<ScheduleConfig>> fields = config_fields();
    read_object("an object", &c.extra, nullptr, [&](std::string_view k) {
      ++n;
      for (size_t f = 0; f < fields.size(); ++f) {
        if (k != fields[f].name) continue;
        if (&ScheduleConfig::sm_assignment ==
                std::get<JsonValue ScheduleConfig::*>(fields[f].member) &&
            lx_.peek() == '{') {  // AMK int-parses the keys of an explicit SM map
          ojson m = ojson::object();
          read_int_keyed([&](int64_t tid, size_t) { m[std::to_string(tid)] = verbatim(1, true); });
          c.sm_assignment = JsonValue(std::move(m));
        } else {
          read_field(c, fields[f].member);
        }
        return static_cast<int>(f);
      }
      if (strict_config_)
        error("config.unknown-field",
              fmt::format("unknown ScheduleConfig field (known: {})", field_names(fields)),
              key_off_);
      return -1;
    });
    return n == 0 ? 0 : 1;
  }

  static inline const std::string kKindChoices = enum_choices<BufferKind>(kBufferKindCount);
  static inline const std::string kDTypeChoices = enum_choices<DType>(kDTypeCount);
  static inline const std::string kSpaceChoices = enum_choices<MemSpace>(kMemSpaceCount);
  static inline const std::string kOpChoices = enum_choices<Op>(kOpCount, 6);

  bool strict_config_ = false;
  KeyMemo task_keys_, wait_keys_, buffer_keys_, counter_keys_;
  std::vector<Wait> wait_scratch_;
};

}  // namespace

bool looks_like_program(std::string_view text) {
  size_t i = text.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  auto skip_ws = [&] {
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
      ++i;
  };
  skip_ws();
  if (i >= text.size() || text[i] != '{') return false;
  ++i;
  skip_ws();
  if (i >= text.size() || text[i] != '"') return false;
  const size_t end = text.find('"', i + 1);
  if (end == std::string_view::npos) return false;
  const std::string_view key = text.substr(i + 1, end - i - 1);
  for (std::string_view k : {"ir_version", "abi_version", "meta", "target", "buffers", "counters",
                             "tasks", "pages", "config"})
    if (key == k) return true;
  return false;
}

Result<Program> parse_program(std::string_view text) {
  Result<Program> r = Reader(text).run();
  lift_runtime(r);
  return r;
}

Result<Target> parse_target(std::string_view text) {
  return Reader(text).run_target();
}

Result<ScheduleConfig> parse_config(std::string_view text, bool strict) {
  return Reader(text).run_config(strict);
}

Result<JsonValue> parse_json_object(std::string_view text, std::string_view what) {
  return Reader(text).run_object(what);
}

nlohmann::ordered_json reread_object(std::string_view text) {
  Result<JsonValue> v = parse_json_object(text, "amk's own output");
  if (!v)
    throw std::logic_error("amk wrote JSON it cannot read back: " + error_messages(v.diagnostics));
  return std::move(v->mut());
}

namespace detail {

size_t find_in_parallel(std::string_view text, std::string_view needle, size_t from) {
  constexpr size_t kBlock = 4u << 20;
  const size_t threads = max_threads();
  if (threads < 2 || needle.empty() || from >= text.size() || text.size() - from < 2 * kBlock)
    return text.find(needle, from);
  // Blocks are taken in order; a block's match is one that starts inside it. Every block before
  // the first with a match has been searched when the threads are done.
  const size_t blocks = (text.size() - from + kBlock - 1) / kBlock;
  std::vector<size_t> at(blocks, std::string_view::npos);
  std::atomic<size_t> next{0}, first{blocks};
  auto search = [&] {
    for (size_t b; (b = next.fetch_add(1)) < blocks && b < first.load();) {
      const size_t begin = from + b * kBlock;
      const size_t end = std::min(text.size(), begin + kBlock + needle.size() - 1);
      at[b] = text.substr(0, end).find(needle, begin);
      if (at[b] == std::string_view::npos) continue;
      for (size_t f = first.load(); b < f && !first.compare_exchange_weak(f, b);) {
      }
      return;
    }
  };
  const size_t parts = std::min(threads, blocks);
  run_parts(parts, parts, [&](size_t, size_t, size_t) { search(); });
  return first < blocks ? at[first] : std::string_view::npos;
}

}  // namespace detail

Result<Program> load_program(const std::string& path) {
  Result<FileBytes> bytes = FileBytes::open(path);
  if (!bytes) return std::move(bytes.diagnostics);
  try {
    Reader r(bytes->view());
    r.on_consumed([&](size_t from, size_t to) { bytes->release(from, to); });
    Result<Program> p = r.run();
    lift_runtime(p);
    return p;
  } catch (const std::bad_alloc&) {
    Diagnostic d = error("io.out-of-memory", fmt::format("out of memory loading '{}' ({} bytes)",
                                                         path, bytes->view().size()));
    d.file = path;
    return d;
  }
}

}  // namespace amk::ir
