// Internal: the pull parser under every JSON reader of ir (programs, targets, configs): a lexer,
// the JSON pointer of the value being read, diagnostics with line:column, generic values and
// objects. ir/json_read.cpp derives the readers of AMK's records from it.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"
#include "ir/json_key_memo.h"
#include "ir/json_lexer.h"
#include "ir/json_text.h"
#include "ir/json_value.h"
#include "ir/pyjson.h"
#include "ir/result.h"
#include "ir/schema.h"

namespace amk::ir::detail {

using ojson = nlohmann::ordered_json;

inline constexpr size_t kMaxErrors = 100;
inline constexpr int kMaxDepth = 256;

struct TooManyErrors {};

// Key comparison against a literal with the length known at compile time (inlined memcmp).
template <size_t N>
bool is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// Python's int(str): surrounding whitespace, optional sign, digits with single '_' separators.
inline std::optional<int64_t> py_int(std::string_view s) {
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

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : lx_(text), text_(text) {}
  /// Called with byte ranges of the text the reader is done with (a mapped file drops them).
  void on_consumed(std::function<void(size_t, size_t)> f) { consumed_ = std::move(f); }

  // One JSON document holding an object (`what`: "a program", "a target", ...) read by
  // `read(value, offset)`: a leading BOM is a warning, anything but an object a json.type error,
  // and every problem a diagnostic with its pointer and line:column.
  template <class T, class F>
  Result<T> document(std::string_view what, F&& read) {
    T value{};
    read_document(
        what, [&] { skip_value(0); }, [&](size_t off) { return describe_at(text_, off); },
        [&](size_t off) { read(value, off); });
    if (has_errors(diags_)) return std::move(diags_);
    Result<T> res(std::move(value));
    res.diagnostics = std::move(diags_);
    return res;
  }

  // Any JSON object, kept verbatim.
  Result<JsonValue> run_object(std::string_view what) {
    return document<JsonValue>(what,
                               [&](JsonValue& v, size_t) { v = JsonValue(verbatim(0, true)); });
  }

 protected:
  // ---- pointer path (a stack of segments, rendered only when a diagnostic needs it) -----------
  // Depth is bounded by kMaxDepth (verbatim values) plus the schema's own levels.
  struct Seg {
    const char* p;  // key chars (input text or owned_), nullptr for a list index
    size_t n;       // key length, or the index
    bool owned;
  };
  static constexpr size_t kMaxPath = kMaxDepth + 16;
  [[gnu::always_inline]] void push(std::string_view key) {
    const bool in_text =
        key.data() >= text_.data() && key.data() + key.size() <= text_.data() + text_.size();
    if (depth_ == kMaxPath || !in_text) return push_owned(key);
    path_[depth_++] = {key.data(), key.size(), false};
  }
  // push() of a key outside the text (a copy is kept), or past the deepest path (a syntax error).
  [[gnu::noinline]] void push_owned(std::string_view key) {
    if (depth_ == kMaxPath) lx_.fail("nesting too deep");
    owned_.emplace_back(key);
    path_[depth_++] = {owned_.back().data(), key.size(), true};
  }
  [[gnu::always_inline]] void push(size_t index) {
    if (depth_ == kMaxPath) lx_.fail("nesting too deep");
    path_[depth_++] = {nullptr, index, false};
  }
  [[gnu::always_inline]] void pop() {
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
  void fill_line_columns() { ir::fill_line_columns(text_, diags_, offsets_); }

  // The frame of a document that must be one object (`what`): a leading BOM is a warning, an
  // empty text or data after the value a syntax error, any other value a json.type error (it is
  // skipped by `skip()`, and `kind_of(offset)` says what it is); `read(offset)` reads the object. A
  // syntax error or the error cap ends it; the diagnostics then get their line:column.
  template <class Skip, class Kind, class Read>
  void read_document(std::string_view what, Skip skip, Kind kind_of, Read read) {
    try {
      if (text_.size() >= 3 && std::memcmp(text_.data(), "\xEF\xBB\xBF", 3) == 0) {
        warn("json.bom", "file starts with a UTF-8 byte-order mark (ignored)", 0);
        lx_.skip_bom();
      }
      const int c = lx_.peek();
      if (c < 0) lx_.fail("Expecting value (empty file)");
      const size_t off = lx_.offset();
      if (c != '{') {
        skip();
        if (!lx_.at_end()) lx_.fail("Extra data");
        error("json.type", fmt::format("{} must be a JSON object, got {}", what, kind_of(off)),
              off);
      } else {
        read(off);
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
  }

  static std::string describe_at(std::string_view text, size_t off) {
    return std::string(json_kind_at(text, off));
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
  // A `true` or `false` literal into `out`; false (nothing read) when the next value is neither.
  bool bool_literal(bool& out) {
    const int c = lx_.peek();
    if (c == 't' && lx_.literal("true")) {
      out = true;
      return true;
    }
    if (c == 'f' && lx_.literal("false")) {
      out = false;
      return true;
    }
    return false;
  }
  bool read_bool(bool& out) {
    const size_t off = lx_.offset();
    if (bool_literal(out)) return true;
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

  // What read_object's `field` returns for a member it read itself and keeps no count of.
  static constexpr int kRead = -2;

  // Iterates an object. `field(key)` reads a known key's value and returns its index (0..63), or
  // returns -1 for an unknown key, which is kept in `extra` verbatim (in order; a duplicate keeps
  // its first position and the last value, as a Python dict does), or kRead for a member it
  // read (or skipped) itself, whatever the key.
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
      KeyMemo::Lead* lead = memo ? memo->learned(member) : nullptr;
      if (lead && lx_.literal64(lead->bytes.data(), lead->size)) {
        koff = lx_.offset() - lead->size + lead->key_at - 1;
        key = std::string_view(text_.data() + koff + 1, lead->key_size);
        first = false;
      } else {
        const size_t lead_at = lx_.offset();
        if (!lx_.next_key(key, key_scratch_, first)) break;
        koff = lx_.key_offset();
        lead = memo ? memo->learn(member, text_, lead_at, key, lx_) : nullptr;
      }
      key_lead_ = lead;
      std::string_view k = key;
      key_off_ = koff;
      push(k);
      int f = field(k);
      if (f >= 0) {
        if (seen & (uint64_t{1} << f))
          warn("json.duplicate-key", fmt::format("duplicate key '{}' (the last one wins)", k),
               koff);
        seen |= uint64_t{1} << f;
      } else if (f == -1) {
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

  // Reads the value of one field of a record into its member, by the member's type.
  template <class R>
  void read_field(R& record, const Member<R>& member) {
    std::visit(
        [&](auto m) {
          using V = std::remove_reference_t<decltype(record.*m)>;
          if constexpr (std::is_same_v<V, std::string>) {
            read_str(record.*m);
          } else if constexpr (std::is_same_v<V, Number>) {
            read_number(record.*m);
          } else if constexpr (std::is_same_v<V, bool>) {
            read_bool(record.*m);
          } else {
            record.*m = JsonValue(verbatim(1, true));
          }
        },
        member);
  }

  // Reads an object member by member: each(key, value_offset) reads the value, with the key on
  // the pointer path; anything but an object is a json.type error.
  template <typename F>
  void for_each_member(F each) {
    const size_t off = lx_.offset();
    if (lx_.peek() != '{') {
      type_error("an object", off);
      return;
    }
    lx_.advance();
    bool first = true;
    std::string_view key;
    while (lx_.next_key(key, key_scratch_, first)) {
      push(key);
      each(key, lx_.offset());
      pop();
    }
  }

  // Reads an object whose keys AMK int-parses; calls each(key_int, key_offset) per member.
  template <typename F>
  void read_int_keyed(F each) {
    for_each_member([&](std::string_view key, size_t voff) {
      const std::string k(key);
      auto id = py_int(k);
      if (!id) {
        error("json.key-not-int", fmt::format("key {} is not an integer", py_repr_str(k)), voff);
        skip_value(0);
      } else {
        each(*id, voff);
      }
    });
  }

  // A top-level array of records (tasks, buffers, counters) read by several threads: see
  // ir/json_read_parallel.h, which defines these.
  // With `with_ids`, each record's id must equal its position (check_id); without, records have
  // none.
  template <class R, typename T, typename Read>
  bool read_in_parallel(std::vector<T>& out, std::string_view key, Read read_one, bool with_ids);
  size_t guess_array_end(size_t open, std::string_view gap, std::string_view sep,
                         size_t small) const;
  template <class R, typename T, typename Read, typename Each>
  void read_records(std::vector<T>& out, std::string_view key, Read read_one, Each each,
                    bool with_ids = true);

  Lexer lx_;
  std::string_view text_;
  size_t key_off_ = 0;  // the offset of the key read_object is handling
  // The memo's lead of that key (its bytes are the lead's), or nullptr when it has none.
  KeyMemo::Lead* key_lead_ = nullptr;
  std::array<Seg, kMaxPath> path_{};
  size_t depth_ = 0;
  std::deque<std::string> owned_;
  Diagnostics diags_;
  std::vector<size_t> offsets_;
  size_t n_errors_ = 0;
  std::string key_scratch_;
  std::string value_scratch_;  // an escaped enum value (the key's view may still be in use)
  std::vector<int64_t> int_scratch_;
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

}  // namespace amk::ir::detail
