// A schema-driven pull parser for AMK program JSON. It reads straight into the data model (no DOM)
// and turns every problem into a diagnostic with a JSON pointer and a line/column.
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <limits>
#include <new>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/fileio.h"
#include "ir/json_io.h"
#include "ir/json_lexer.h"
#include "ir/parallel.h"
#include "ir/pyjson.h"

namespace amk::ir {
namespace {

using detail::Lexer;
using detail::NumTok;
using detail::SyntaxError;

using ojson = nlohmann::ordered_json;

constexpr size_t kMaxErrors = 100;
constexpr int kMaxDepth = 256;

struct TooManyErrors {};

// Key comparison against a literal with the length known at compile time (inlined memcmp).
template <size_t N>
bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// Python's int(str): surrounding whitespace, optional sign, digits with single '_' separators.
std::optional<int64_t> py_int(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() == '_' || s.back() == '_') return std::nullopt;
  std::string digits;
  for (size_t k = 0; k < s.size(); ++k) {
    char c = s[k];
    if (c == '_') {
      if (s[k - 1] == '_') return std::nullopt;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    digits += c;
  }
  int64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return std::nullopt;
  return neg ? -v : v;
}

template <size_t N>
std::string enum_choices(const std::array<std::string_view, N>& names) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i) s += ", ";
    s += names[i];
  }
  return s;
}

class Reader {
 public:
  explicit Reader(std::string_view text) : lx_(text), text_(text) {}
  /// Called with byte ranges of the text the reader is done with (a mapped file drops them).
  void on_consumed(std::function<void(size_t, size_t)> f) { consumed_ = std::move(f); }

  // One JSON document holding an object (`what`: "a program", "a target", ...) read by
  // `read(value, offset)`: a leading BOM is a warning, anything but an object a json.type error,
  // and every problem a diagnostic with its pointer and line:column.
  template <class T, class F>
  Result<T> document(std::string_view what, F&& read) {
    T value{};
    try {
      if (text_.size() >= 3 && std::memcmp(text_.data(), "\xEF\xBB\xBF", 3) == 0) {
        warn("json.bom", "file starts with a UTF-8 byte-order mark (ignored)", 0);
        lx_.skip_bom();
      }
      int c = lx_.peek();
      if (c < 0) lx_.fail("Expecting value (empty file)");
      const size_t off = lx_.offset();
      if (c != '{') {
        skip_value(0);
        if (!lx_.at_end()) lx_.fail("Extra data");
        error("json.type",
              fmt::format("{} must be a JSON object, got {}", what, describe_at(text_, off)), off);
      } else {
        read(value, off);
        if (!lx_.at_end()) lx_.fail("Extra data");
      }
    } catch (const SyntaxError& e) {
      error("json.syntax", e.message, e.offset, /*allow_past_cap=*/true);
    } catch (const TooManyErrors&) {
      diags_.push_back(
          ir::error("json.too-many-errors", fmt::format("stopped after {} errors", kMaxErrors)));
      offsets_.push_back(std::string::npos);
    }
    fill_line_columns();
    if (has_errors(diags_)) return std::move(diags_);
    Result<T> res(std::move(value));
    res.diagnostics = std::move(diags_);
    return res;
  }

  Result<Program> run() {
    return document<Program>("a program", [&](Program& p, size_t) { read_program(p); });
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

  // Any JSON object, kept verbatim.
  Result<JsonValue> run_object(std::string_view what) {
    return document<JsonValue>(what,
                               [&](JsonValue& v, size_t) { v = JsonValue(verbatim(0, true)); });
  }

 private:
  // The bytes that led to each key of the last object of one kind: from where the member began
  // (after the '{' or the previous value) through the ':' and the blank after it, the key a view
  // into the text without escapes. A canonical file repeats them exactly from object to object,
  // so read_object finds the next object's keys by one comparison each. Bytes equal to a lead
  // are lexed as that lead was (the same blanks, ',', key and ':'; a first member's lead has no
  // ','), so a match reads exactly what the lexer would have read.
  struct KeyMemo {
    static constexpr size_t kMaxLead = 64;
    struct Lead {
      std::array<char, kMaxLead> bytes{};  // the first `size` of them
      size_t size = 0;
      size_t key_at = 0;  // the key's first character in `bytes`
      size_t key_size = 0;
    };
    static constexpr size_t kMaxMembers = 32;
    std::vector<Lead> leads;  // by member position; an empty one was not learned

    const Lead* learned(size_t member) const {
      return member < leads.size() && leads[member].size != 0 ? &leads[member] : nullptr;
    }

    // Records how member `member`'s key was reached: the text from `lead_at` to the lexer's
    // position (after its blanks), when the key is in the text and the lead is short.
    void learn(size_t member, std::string_view text, size_t lead_at, std::string_view key,
               Lexer& lx) {
      if (member >= kMaxMembers || key.data() < text.data() ||
          key.data() + key.size() > text.data() + text.size())
        return;
      lx.ws();  // the value's leading blanks, which its reader would skip anyway
      const size_t end = lx.offset();
      if (end - lead_at > kMaxLead) return;
      if (leads.size() <= member) leads.resize(member + 1);
      Lead& l = leads[member];
      l.size = end - lead_at;
      std::memcpy(l.bytes.data(), text.data() + lead_at, l.size);
      l.key_at = static_cast<size_t>(key.data() - text.data()) - lead_at;
      l.key_size = key.size();
    }
  };

  // ---- pointer path (a stack of segments, rendered only when a diagnostic needs it) -----------
  // Depth is bounded by kMaxDepth (verbatim values) plus the schema's own levels.
  struct Seg {
    const char* p;  // key chars (input text or owned_), nullptr for a list index
    size_t n;       // key length, or the index
    bool owned;
  };
  static constexpr size_t kMaxPath = kMaxDepth + 16;
  void push(std::string_view key) {
    if (depth_ == kMaxPath) lx_.fail("nesting too deep");
    bool in_text =
        key.data() >= text_.data() && key.data() + key.size() <= text_.data() + text_.size();
    if (in_text) {
      path_[depth_++] = {key.data(), key.size(), false};
    } else {
      owned_.emplace_back(key);
      path_[depth_++] = {owned_.back().data(), key.size(), true};
    }
  }
  void push(size_t index) {
    if (depth_ == kMaxPath) lx_.fail("nesting too deep");
    path_[depth_++] = {nullptr, index, false};
  }
  void pop() {
    if (path_[--depth_].owned) owned_.pop_back();
  }
  std::string pointer() const {
    std::string out;
    for (size_t i = 0; i < depth_; ++i) {
      const Seg& s = path_[i];
      out += '/';
      if (s.p == nullptr) {
        out += std::to_string(s.n);
      } else {
        out += pointer_token({s.p, s.n});
      }
    }
    return out;
  }

  // ---- diagnostics ------------------------------------------------------------------------------
  void add(Severity sev, std::string code, std::string msg, size_t off, bool allow_past_cap) {
    if (sev == Severity::Error) {
      if (n_errors_ >= kMaxErrors && !allow_past_cap) throw TooManyErrors{};
      ++n_errors_;
    }
    Diagnostic d = ir::error(std::move(code), std::move(msg), pointer());
    d.severity = sev;
    diags_.push_back(std::move(d));
    offsets_.push_back(off);
  }
  void error(std::string code, std::string msg, size_t off, bool allow_past_cap = false) {
    add(Severity::Error, std::move(code), std::move(msg), off, allow_past_cap);
  }
  void warn(std::string code, std::string msg, size_t off) {
    add(Severity::Warning, std::move(code), std::move(msg), off, false);
  }
  void fill_line_columns() {
    std::vector<size_t> order(diags_.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return offsets_[a] < offsets_[b]; });
    size_t pos = 0;
    int line = 1, col = 1;
    for (size_t k : order) {
      size_t off = offsets_[k];
      if (off == std::string::npos) continue;
      off = std::min(off, text_.size());
      for (; pos < off; ++pos) {
        if (text_[pos] == '\n') {
          ++line;
          col = 1;
        } else {
          ++col;
        }
      }
      diags_[k].line = line;
      diags_[k].column = col;
    }
  }

  static std::string describe_at(std::string_view text, size_t off) {
    if (off >= text.size()) return "nothing";
    switch (text[off]) {
      case '{':
        return "an object";
      case '[':
        return "an array";
      case '"':
        return "a string";
      case 't':
      case 'f':
        return "a boolean";
      case 'n':
        return "null";
      default:
        return "a number";
    }
  }
  std::string got(size_t off) const {
    std::string d = describe_at(text_, off);
    if (d == "a number" || d == "a boolean") {
      size_t end = off;
      while (end < text_.size() && end - off < 40 &&
             std::strchr(",]} \n\r\t", text_[end]) == nullptr)
        ++end;
      return std::string(text_.substr(off, end - off));
    }
    return d;
  }
  void type_error(std::string_view expected, size_t off) {
    error("json.type", fmt::format("expected {}, got {}", expected, got(off)), off);
    skip_value(0);
  }

  // ---- generic values ---------------------------------------------------------------------------
  void skip_value(int depth) { (void)verbatim(depth, /*keep=*/false); }

  void check_finite(const NumTok& t, size_t off) {
    if (t.kind == NumTok::Kind::Float && !std::isfinite(t.d))
      error(
          "json.non-finite",
          fmt::format("non-finite number {} is not allowed (amk rejects NaN and Infinity)", t.text),
          off);
  }

  ojson verbatim(int depth, bool keep) {
    if (depth > kMaxDepth) lx_.fail(fmt::format("nesting deeper than {} levels", kMaxDepth));
    int c = lx_.peek();
    size_t off = lx_.offset();
    switch (c) {
      case '{': {
        lx_.advance();
        ojson obj = ojson::object();
        bool first = true;
        std::string_view key;
        std::string kscratch;
        while (lx_.next_key(key, kscratch, first)) {
          push(key);
          std::string k(key);
          ojson v = verbatim(depth + 1, keep);
          if (keep) {
            if (obj.contains(k))
              warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", k),
                   off);
            obj[k] = std::move(v);
          }
          pop();
        }
        return obj;
      }
      case '[': {
        lx_.advance();
        ojson arr = ojson::array();
        bool first = true;
        size_t i = 0;
        while (lx_.next_element(first)) {
          push(i++);
          ojson v = verbatim(depth + 1, keep);
          if (keep) arr.push_back(std::move(v));
          pop();
        }
        return arr;
      }
      case '"': {
        std::string s;
        lx_.read_string(s);
        return keep ? ojson(std::move(s)) : ojson();
      }
      case 't':
        if (lx_.literal("true")) return ojson(true);
        break;
      case 'f':
        if (lx_.literal("false")) return ojson(false);
        break;
      case 'n':
        if (lx_.literal("null")) return ojson();
        break;
      case 'N':
        if (lx_.literal("NaN")) {
          NumTok t;
          t.kind = NumTok::Kind::Float;
          t.d = std::nan("");
          t.text = "NaN";
          check_finite(t, off);
          return ojson();
        }
        break;
      case 'I':
        if (lx_.literal("Infinity")) {
          NumTok t;
          t.kind = NumTok::Kind::Float;
          t.d = std::numeric_limits<double>::infinity();
          t.text = "Infinity";
          check_finite(t, off);
          return ojson();
        }
        break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          NumTok t = lx_.number();
          switch (t.kind) {
            case NumTok::Kind::Int:
              return ojson(t.i);
            case NumTok::Kind::UInt:
              return ojson(t.u);
            case NumTok::Kind::BigInt:
              error("json.int-range", fmt::format("integer {} does not fit in 64 bits", t.text),
                    off);
              return ojson();
            case NumTok::Kind::Float:
              check_finite(t, off);
              return ojson(t.d);
          }
        }
        break;
    }
    lx_.fail("Expecting value");
  }

  // A number token at the current position (including NaN/Infinity literals), or nullopt after a
  // type error when the value is not a number.
  std::optional<NumTok> number_token(std::string_view expected) {
    int c = lx_.peek();
    size_t off = lx_.offset();
    if (c == '-' || (c >= '0' && c <= '9')) {
      NumTok t = lx_.number();
      check_finite(t, off);
      return t;
    }
    if (c == 'N' || c == 'I') {
      skip_value(0);  // reports the non-finite literal
      return std::nullopt;
    }
    type_error(expected, off);
    return std::nullopt;
  }

  bool read_int(int64_t& out) {
    const size_t off = lx_.offset();
    lx_.peek();
    if (lx_.small_int(out)) return true;  // the common case; anything else is read in full
    auto t = number_token("an integer");
    if (!t) return false;
    if (t->kind == NumTok::Kind::Int) {
      out = t->i;
      return true;
    }
    if (t->kind == NumTok::Kind::Float) {
      error("json.type", fmt::format("expected an integer, got {}", t->text), off);
    } else {
      error("json.int-range", fmt::format("integer {} is out of range (int64)", t->text), off);
    }
    return false;
  }
  bool read_number(Number& out) {
    size_t off = lx_.offset();
    auto t = number_token("a number");
    if (!t) return false;
    switch (t->kind) {
      case NumTok::Kind::Int:
        out = Number::of(t->i);
        return true;
      case NumTok::Kind::Float:
        out = Number::real(t->d);
        return std::isfinite(t->d);
      default:
        error("json.int-range", fmt::format("integer {} is out of range (int64)", t->text), off);
        return false;
    }
  }
  bool read_bool(bool& out) {
    size_t off = lx_.offset();
    int c = lx_.peek();
    if (c == 't' && lx_.literal("true")) {
      out = true;
      return true;
    }
    if (c == 'f' && lx_.literal("false")) {
      out = false;
      return true;
    }
    type_error("a boolean", off);
    return false;
  }
  bool read_str(std::string& out) {
    size_t off = lx_.offset();
    if (lx_.peek() != '"') {
      type_error("a string", off);
      return false;
    }
    lx_.read_string(out);
    return true;
  }
  bool read_opt_str(std::optional<std::string>& out) {
    if (lx_.peek() == 'n' && lx_.literal("null")) {
      out.reset();
      return true;
    }
    std::string s;
    if (!read_str(s)) return false;
    out = std::move(s);
    return true;
  }
  template <typename E, typename Parse>
  bool read_enum(E& out, Parse parse, std::string_view what, std::string_view choices) {
    size_t off = lx_.offset();
    if (lx_.peek() != '"') {
      type_error("a string", off);
      return false;
    }
    const std::string_view s = lx_.string_view_(value_scratch_);  // no copy: only looked up
    auto v = parse(s);
    if (!v) {
      error("json.unknown-enum",
            fmt::format("unknown {} {} (one of: {})", what, py_repr_str(s), choices), off);
      return false;
    }
    out = *v;
    return true;
  }
  bool read_int_list(std::vector<int64_t>& out) {
    size_t off = lx_.offset();
    if (lx_.peek() != '[') {
      type_error("an array of integers", off);
      return false;
    }
    lx_.advance();
    int_scratch_.clear();
    bool first = true, ok = true;
    size_t i = 0;
    while (lx_.next_element(first)) {
      push(i++);
      int64_t v = 0;
      if (read_int(v)) {
        int_scratch_.push_back(v);
      } else {
        ok = false;
      }
      pop();
    }
    out.assign(int_scratch_.begin(), int_scratch_.end());  // one exact-size allocation
    return ok;
  }

  // Iterates an object. `field(key)` reads a known key's value and returns its index (0..63), or
  // returns -1 for an unknown key, which is kept in `extra` verbatim (in order; a duplicate keeps
  // its first position and the last value, as a Python dict does).
  // With `memo`, the keys of the objects of one kind are found by comparing bytes (see KeyMemo).
  template <typename F>
  bool read_object(std::string_view what, JsonValue* extra, KeyMemo* memo, F field) {
    size_t off = lx_.offset();
    if (lx_.peek() != '{') {
      type_error(what, off);
      return false;
    }
    lx_.advance();
    bool first = true;
    std::string_view key;
    uint64_t seen = 0;
    for (size_t member = 0;; ++member) {
      size_t koff = 0;  // the key's opening quote
      const KeyMemo::Lead* lead = memo ? memo->learned(member) : nullptr;
      if (lead && lx_.literal64(lead->bytes.data(), lead->size)) {
        koff = lx_.offset() - lead->size + lead->key_at - 1;
        key = text_.substr(koff + 1, lead->key_size);
        first = false;
      } else {
        const size_t lead_at = lx_.offset();
        if (!lx_.next_key(key, key_scratch_, first)) break;
        koff = lx_.key_offset();
        if (memo) memo->learn(member, text_, lead_at, key, lx_);
      }
      std::string_view k = key;
      key_off_ = koff;
      push(k);
      int f = field(k);
      if (f >= 0) {
        if (seen & (uint64_t{1} << f))
          warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", k),
               koff);
        seen |= uint64_t{1} << f;
      } else {
        std::string ks(k);  // the key view may be overwritten while the value is read
        pop();
        push(ks);
        ojson v = verbatim(1, extra != nullptr);
        if (extra) {
          if (extra->is_null()) *extra = JsonValue::object();
          if (extra->json().contains(ks))
            warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", ks),
                 koff);
          extra->mut()[ks] = std::move(v);
        }
      }
      pop();
    }
    return true;
  }

  void missing(std::string_view what, std::string_view key, size_t off) {
    error("json.missing-field", fmt::format("{} is missing the required field '{}'", what, key),
          off);
  }

  void check_id(std::string_view what, bool have, int64_t id, size_t index, size_t off) {
    if (have && index == kAnyIndex) {  // a chunk of a parallel read: checked once merged
      ids_.push_back(id);
      return;
    }
    if (!have) {
      missing(what, "id", off);
    } else if (id != static_cast<int64_t>(index)) {
      push("id");
      error("json.id-position",
            fmt::format("{} id {} at list position {}: ids must equal list positions", what, id,
                        index),
            off);
      pop();
    }
  }

  // ---- records
  // -----------------------------------------------------------------------------------
  void read_program(Program& p) {
    bool have_ir = false, have_abi = false;
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
        read_records(
            p.buffers, "buffers", [](Reader& r, Buffer& b) { r.read_buffer(b, kAnyIndex); },
            [&](Buffer& b, size_t i) { read_buffer(b, i); });
        return 4;
      }
      if (is(k, "counters")) {
        read_records(
            p.counters, "counters", [](Reader& r, Counter& c) { r.read_counter(c, kAnyIndex); },
            [&](Counter& c, size_t i) { read_counter(c, i); });
        return 5;
      }
      if (is(k, "tasks")) {
        read_records(
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

  // A big top-level array (tasks, buffers, counters), read by several threads: the array is cut
  // at guessed element boundaries (the separator of its first two elements, e.g. ",\n    {" in
  // AMK's layout) spread over its guessed extent, each thread reads the elements of one piece
  // with `read_one(reader, element)`, and a piece counts only when the piece before it ended
  // exactly where it began. Ids are checked against positions once merged. False (nothing kept,
  // the caller reads sequentially) for a small array, a guess that did not hold, or any
  // diagnostic, so every problem is reported exactly as the sequential read reports it.
  template <typename T, typename Read>
  bool read_in_parallel(std::vector<T>& out, std::string_view key, Read read_one) {
    // Arrays of at least this size are read in pieces: the 6 MB counters array of a 100k-task
    // mesh took 7.4 ms on one thread, 5.7 ms on two (medians of 6 runs).
    constexpr size_t kMinBytes = 4u << 20;
    const size_t pieces = max_threads();
    if (pieces < 2 || text_.size() - lx_.offset() < kMinBytes || !diags_.empty() || depth_ != 1 ||
        lx_.peek() != '[')
      return false;
    const size_t open = lx_.offset();  // at the '[' (peek skipped the whitespace)
    // The separator: the bytes between '[' and the first '{', after a ','.
    const size_t first = text_.find_first_not_of(" \t\r\n", open + 1);
    if (first == std::string_view::npos || text_[first] != '{') return false;
    const std::string_view gap = text_.substr(open + 1, first - open - 1);
    const std::string sep = "," + std::string(gap) + "{";
    const size_t end = guess_array_end(open, gap, kMinBytes);
    if (end - open < kMinBytes) return false;
    // Guessed starts: just after a separator's ',', spread over the guessed extent.
    std::vector<size_t> starts{open + 1};
    const size_t span = end - open;
    for (size_t k = 1; k < pieces; ++k) {
      const size_t at = text_.find(sep, open + span * k / pieces);
      if (at == std::string_view::npos || at >= end) break;
      if (at + 1 > starts.back()) starts.push_back(at + 1);
    }
    if (starts.size() < 2) return false;
    struct Piece {
      std::vector<T> items;
      std::vector<int64_t> ids;
      size_t end = 0;       // the offset after its last element's ',' (or after ']')
      bool closed = false;  // it read the array's ']'
      bool ok = false;      // no diagnostic, no syntax error, ended at a ',' or ']'
    };
    std::vector<Piece> got(starts.size());
    auto read_piece = [&](size_t k) {
      Piece& pc = got[k];
      Reader r(text_);
      r.push(key);
      r.lx_.seek(starts[k]);
      r.consumed_ = consumed_;
      r.released_ = starts[k];
      const size_t stop = k + 1 < starts.size() ? starts[k + 1] : std::string_view::npos;
      try {
        for (;;) {
          if (r.lx_.peek() != '{') return;
          const size_t at = r.lx_.offset();
          r.push(pc.items.size());
          pc.items.emplace_back();
          read_one(r, pc.items.back());
          r.pop();
          // Room, at the first element's size, for the piece (no doubling slack), and in the
          // first piece for the whole array: it becomes the result, and the others are moved
          // to its end without a copy of it (capacity never touched costs no memory).
          // Only a hint: a first element far smaller than the rest asks for too much.
          if (pc.items.size() == 1) {
            const size_t bytes = std::max<size_t>(r.lx_.offset() - at, 1);
            try {
              pc.items.reserve(((k == 0 ? end : std::min(stop, end)) - at) / bytes * 5 / 4 + 16);
            } catch (const std::bad_alloc&) {
            }
          }
          if (!r.diags_.empty()) return;  // a wrong guess, or a problem the caller reports
          r.consume_behind();
          const int c = r.lx_.peek();
          r.lx_.advance();
          if (c == ']') {
            pc.closed = true;
            break;
          }
          if (c != ',') return;
          if (r.lx_.offset() >= stop) break;
        }
        pc.end = r.lx_.offset();
        if (r.consumed_) r.consumed_(r.released_, pc.end);  // its tail too: nothing re-reads it
        pc.ok = r.ids_.size() == pc.items.size();
        pc.ids = std::move(r.ids_);
      } catch (const SyntaxError&) {
      } catch (const TooManyErrors&) {
      }
    };
    run_parts(starts.size(), starts.size(), [&](size_t k, size_t, size_t) { read_piece(k); });
    // Chain the pieces: each must begin where the one before ended, until one closes the array.
    size_t n = 0, used = 0;
    for (; used < got.size(); ++used) {
      const Piece& pc = got[used];
      if (!pc.ok || (used > 0 && got[used - 1].end != starts[used])) return false;
      for (int64_t id : pc.ids)
        if (id != static_cast<int64_t>(n++)) return false;
      if (pc.closed) break;
    }
    if (used == got.size()) return false;  // never closed: cannot happen when the chain holds
    out = std::move(got[0].items);
    out.reserve(n);
    for (size_t k = 1; k <= used; ++k) {
      for (T& x : got[k].items) out.push_back(std::move(x));
      got[k].items = {};
    }
    lx_.seek(got[used].end);
    return true;
  }

  // Where the array opened at `open` (its first element after the whitespace `gap`) probably
  // ends: in an indented layout, the first '}' then ']' at the indentation of the line that
  // opened it; otherwise (or not found) the end of the text. Only a guess: read_in_parallel's
  // chain check makes a wrong one cost time, never correctness. An array of fewer than `small`
  // bytes is searched only as far as that (it is read next by one thread, which then finds its
  // bytes already read in); the rest of a longer one by several threads.
  size_t guess_array_end(size_t open, std::string_view gap, size_t small) const {
    if (gap.find('\n') == std::string_view::npos) return text_.size();
    const size_t line = text_.rfind('\n', open);
    const size_t from = line == std::string_view::npos ? 0 : line + 1;
    const size_t indent = text_.find_first_not_of(' ', from) - from;
    const std::string close = "}\n" + std::string(indent, ' ') + "]";
    const size_t near = open + small;
    size_t at = text_.substr(0, std::min(near, text_.size())).find(close, open);
    if (at == std::string_view::npos && near < text_.size())
      at = detail::find_in_parallel(text_, close, near - close.size() + 1);
    return at == std::string_view::npos ? text_.size() : at + close.size();
  }

  // A top-level array of records: in parallel when it is big, else (or when that did not hold)
  // one element after the other.
  template <typename T, typename Read, typename Each>
  void read_records(std::vector<T>& out, std::string_view key, Read read_one, Each each) {
    out.clear();
    const size_t at = lx_.offset();
    if (read_in_parallel(out, key, read_one)) return;  // else it kept nothing
    lx_.seek(at);
    read_list(out, each);
  }

  template <typename T, typename F>
  void read_list(std::vector<T>& out, F each) {
    size_t off = lx_.offset();
    if (lx_.peek() != '[') {
      type_error("an array", off);
      return;
    }
    lx_.advance();
    bool first = true;
    size_t i = 0;
    while (lx_.next_element(first)) {
      push(i);
      out.emplace_back();
      each(out.back(), i);
      pop();
      ++i;
      if (depth_ == 1) consume_behind();
    }
  }

  // AMK treats a falsy value (null, {}, [], 0, "", false) as absent.
  template <typename T, typename F>
  void read_optional_record(std::optional<T>& out, std::string_view what, F read) {
    size_t off = lx_.offset();
    int c = lx_.peek();
    if (c == '{') {
      // Peek for an empty object: AMK loads {} as None.
      T rec{};
      if (read(rec) == 1) out = std::move(rec);
      return;
    }
    ojson v = verbatim(1, true);
    bool falsy = v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
                 (v.is_number() && v.get<double>() == 0) || (v.is_string() && v.empty()) ||
                 (v.is_array() && v.empty());
    if (!falsy)
      error(
          "json.type",
          fmt::format("expected an object or null for '{}', got {}", what, describe_at(text_, off)),
          off);
  }

  // Returns 1 when a non-empty object was read, 0 for {} (absent).
  int read_target(Target& t) {
    size_t off = lx_.offset();
    uint32_t seen = 0;
    int n = 0;
    static constexpr std::string_view kNames[] = {"name",
                                                  "sm_arch",
                                                  "num_sms",
                                                  "smem_bytes_per_sm",
                                                  "smem_bytes_per_block_optin",
                                                  "regs_per_sm",
                                                  "max_threads_per_sm",
                                                  "max_regs_per_thread",
                                                  "l2_bytes",
                                                  "hbm_bytes",
                                                  "hbm_bandwidth_gbs",
                                                  "fp16_tflops",
                                                  "clock_ghz",
                                                  "supports_cooperative",
                                                  "wddm_tdr",
                                                  "measured_bw_gbs",
                                                  "note"};
    Number* nums[] = {nullptr,
                      &t.sm_arch,
                      &t.num_sms,
                      &t.smem_bytes_per_sm,
                      &t.smem_bytes_per_block_optin,
                      &t.regs_per_sm,
                      &t.max_threads_per_sm,
                      &t.max_regs_per_thread,
                      &t.l2_bytes,
                      &t.hbm_bytes,
                      &t.hbm_bandwidth_gbs,
                      &t.fp16_tflops,
                      &t.clock_ghz,
                      nullptr,
                      nullptr,
                      &t.measured_bw_gbs,
                      nullptr};
    read_object("an object", &t.extra, nullptr, [&](std::string_view k) {
      ++n;
      for (int f = 0; f < static_cast<int>(std::size(kNames)); ++f) {
        if (k != kNames[f]) continue;
        seen |= 1u << f;
        if (f == 0) {
          read_str(t.name);
        } else if (f == 13) {
          read_bool(t.supports_cooperative);
        } else if (f == 14) {
          read_bool(t.wddm_tdr);
        } else if (f == 16) {
          read_str(t.note);
        } else {
          read_number(*nums[f]);
        }
        return f;
      }
      return -1;
    });
    if (n == 0) return 0;
    for (size_t f = 0; f < 12; ++f)
      if (!(seen & (1u << f))) missing("target", kNames[f], off);
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
    size_t off = lx_.offset();
    if (lx_.peek() != '{') {
      type_error("an object", off);
      return;
    }
    lx_.advance();
    bool first = true;
    std::string_view key;
    while (lx_.next_key(key, key_scratch_, first)) {
      push(key);
      std::string k(key);
      size_t voff = lx_.offset();
      ParamValue v;
      int c = lx_.peek();
      if (c == '-' || (c >= '0' && c <= '9')) {
        NumTok t = lx_.number();
        check_finite(t, voff);
        if (t.kind == NumTok::Kind::Int) {
          v = ParamValue::of_int(t.i);
        } else if (t.kind == NumTok::Kind::Float) {
          v = ParamValue::of_float(t.d);
        } else {
          error("json.int-range", fmt::format("integer {} is out of range (int64)", t.text), voff);
        }
      } else if (c == 't' && lx_.literal("true")) {
        v = ParamValue::of_bool(true);
      } else if (c == 'f' && lx_.literal("false")) {
        v = ParamValue::of_bool(false);
      } else {
        v = ParamValue::of_json(JsonValue(verbatim(1, true)));
      }
      bool dup = false;
      for (Param& p : params) {
        if (p.key == k) {
          warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", k),
               voff);
          p.value = std::move(v);
          dup = true;
          break;
        }
      }
      if (!dup) params.push_back({std::move(k), std::move(v)});
      pop();
    }
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

  // Reads an object whose keys AMK int-parses; calls each(key_int, key_offset) per member.
  template <typename F>
  void read_int_keyed(F each) {
    size_t off = lx_.offset();
    if (lx_.peek() != '{') {
      type_error("an object", off);
      return;
    }
    lx_.advance();
    bool first = true;
    std::string_view key;
    while (lx_.next_key(key, key_scratch_, first)) {
      push(key);
      std::string k(key);
      size_t voff = lx_.offset();
      auto id = py_int(k);
      if (!id) {
        error("json.key-not-int", fmt::format("key {} is not an integer", py_repr_str(k)), voff);
        skip_value(0);
      } else {
        each(*id, voff);
      }
      pop();
    }
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
    static constexpr std::string_view kNames[] = {
        "tiling",          "fusion_grouping",   "sm_assignment",       "pipelining_depth",
        "page_allocation", "threads_per_block", "smem_bytes_per_block"};
    JsonValue* slots[] = {
        &c.tiling,          &c.fusion_grouping,   &c.sm_assignment,       &c.pipelining_depth,
        &c.page_allocation, &c.threads_per_block, &c.smem_bytes_per_block};
    read_object("an object", &c.extra, nullptr, [&](std::string_view k) {
      ++n;
      for (int f = 0; f < 7; ++f) {
        if (k != kNames[f]) continue;
        if (f == 2 && lx_.peek() == '{') {  // AMK int-parses the keys of an explicit SM map
          ojson m = ojson::object();
          read_int_keyed([&](int64_t tid, size_t) { m[std::to_string(tid)] = verbatim(1, true); });
          *slots[f] = JsonValue(std::move(m));
        } else {
          *slots[f] = JsonValue(verbatim(1, true));
        }
        return f;
      }
      if (strict_config_)
        error("config.unknown-field",
              "unknown ScheduleConfig field (known: tiling, fusion_grouping, sm_assignment, "
              "pipelining_depth, page_allocation, threads_per_block, smem_bytes_per_block)",
              key_off_);
      return -1;
    });
    return n == 0 ? 0 : 1;
  }

  static inline const std::string kKindChoices = enum_choices(std::array<std::string_view, 6>{
      "WEIGHT", "ACTIVATION", "KV_CACHE", "IO_INPUT", "IO_OUTPUT", "CONST"});
  static inline const std::string kDTypeChoices = enum_choices(std::array<std::string_view, 10>{
      "F32", "F16", "BF16", "F8E4M3", "F8E5M2", "I32", "I8", "I4", "U8", "BOOL"});
  static inline const std::string kSpaceChoices =
      enum_choices(std::array<std::string_view, 4>{"HBM", "GLOBAL_SCRATCH", "SMEM", "REGISTER"});
  static inline const std::string kOpChoices = "NOP, COPY, EMBED, ..., ATTENTION_COMBINE, FUSED";

  Lexer lx_;
  std::string_view text_;
  bool strict_config_ = false;
  size_t key_off_ = 0;  // the offset of the key read_object is handling
  std::array<Seg, kMaxPath> path_{};
  size_t depth_ = 0;
  std::deque<std::string> owned_;
  Diagnostics diags_;
  std::vector<size_t> offsets_;
  size_t n_errors_ = 0;
  std::string key_scratch_;
  KeyMemo task_keys_, wait_keys_, buffer_keys_, counter_keys_;
  std::string value_scratch_;  // an escaped enum value (the key's view may still be in use)
  std::vector<int64_t> int_scratch_;
  std::vector<Wait> wait_scratch_;
  std::vector<int64_t> ids_;  // ids read with kAnyIndex (a piece of a parallel read)
  std::function<void(size_t, size_t)> consumed_;
  size_t released_ = 0;  // the text before this offset was handed to consumed_

  // Hands the text read since the last call to consumed_, every 32 MiB.
  void consume_behind() {
    constexpr size_t kStep = 32u << 20;
    if (consumed_ && lx_.offset() >= released_ + kStep) {
      consumed_(released_, lx_.offset());
      released_ = lx_.offset();
    }
  }
  static constexpr size_t kAnyIndex = std::numeric_limits<size_t>::max();
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
  Reader r(bytes->view());
  r.on_consumed([&](size_t from, size_t to) { bytes->release(from, to); });
  Result<Program> p = r.run();
  lift_runtime(p);
  return p;
}

}  // namespace amk::ir
