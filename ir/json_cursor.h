// Internal: a reader of one JSON document for schema-driven readers of other file formats (MPK's
// task_graph.json, PTO's deps.json): the program reader's JsonReader underneath (its lexer, its
// lazily rendered pointer path, its key memo and its parallel read of big arrays), and every
// problem a diagnostic with a JSON pointer and a line:column, as the program reader reports them.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/json_read_parallel.h"
#include "ir/json_text.h"
#include "ir/result.h"

namespace amk::ir {

/// A JSON string as it stands in a text that outlives it: the bytes between its quotes, JSON
/// escapes and all when `escaped` (value() decodes them); or a plain string a writer gives.
struct RawString {
  std::string_view raw;
  bool escaped = false;
  /// The string.
  std::string value() const;
  /// Whether the string is `s`.
  bool operator==(std::string_view s) const { return escaped ? value() == s : raw == s; }
};

/// Walks one JSON text. object() and array() keep the pointer path; a value read with the wrong
/// type is reported (json.type) and skipped. Syntax errors end the document (json.syntax); after
/// 100 errors it stops (json.too-many-errors). A format's reader derives from it.
class JsonCursor : public detail::JsonReader {
 public:
  /// A cursor at the start of `text` (which must outlive it).
  explicit JsonCursor(std::string_view text) : JsonReader(text) {}

  /// Runs `read` over the document, which must be one object (`what` names it: "an MPK task
  /// graph"); returns the diagnostics with line:column filled in.
  template <class F>
  Diagnostics document(std::string_view what, F&& read) {
    run_document(what, [&] { read(); });
    return std::move(diags_);
  }

  /// The byte offset of the next value.
  size_t offset() {
    lx_.peek();
    return lx_.offset();
  }
  /// The current JSON pointer.
  std::string pointer() const { return JsonReader::pointer(); }
  /// True (and the value consumed) when the next value is null.
  bool null() { return lx_.peek() == 'n' && lx_.literal("null"); }

  /// Reads an object: `field(key)` reads each member's value, with the key on the pointer path;
  /// `memo` (nullptr: none) learns the layout of the objects of one kind (detail::KeyMemo).
  /// False (reported, skipped) when the value is not an object.
  template <class F>
  bool object(std::string_view what, detail::KeyMemo* memo, F field) {
    if (lx_.peek() != '{') {
      type_error(what);
      return false;
    }
    return read_object(what, nullptr, memo, [&](std::string_view key) {
      field(key);
      return kRead;
    });
  }
  /// One field of a record: its key, and whether a record must have it.
  struct Field {
    std::string_view key;
    bool required = true;
  };
  /// Reads an object whose known keys are `fields`: `read(k)` reads the value of fields[k],
  /// `unknown(key)` reads or skips the value of any other key; each required field that is
  /// absent is an error, "`record` is missing the required field 'KEY'", at the object. Returns
  /// the fields seen, by bit (fields[k]: bit k; at most 64), or nullopt (reported, skipped) when
  /// the value is not an object (`what`). With a `memo` (one per record kind, and so per
  /// `fields`), a key whose bytes the memo knows is not compared again.
  template <size_t N, class Read, class Unknown>
  std::optional<uint64_t> record(std::string_view what, std::string_view record,
                                 detail::KeyMemo* memo, const Field (&fields)[N], Read read,
                                 Unknown unknown) {
    static_assert(N < 64);
    const size_t at = offset();
    uint64_t seen = 0;
    const bool is_object = object(what, memo, [&](std::string_view key) {
      detail::KeyMemo::Lead* lead = key_lead_;
      size_t k = 0;
      if (lead && lead->field != 0) {
        k = lead->field - 1u;
      } else {
        while (k < N && fields[k].key != key) ++k;
        if (lead) lead->field = static_cast<uint8_t>(k + 1);
      }
      if (k == N) return unknown(key);
      seen |= uint64_t{1} << k;
      read(k);
    });
    if (!is_object) return std::nullopt;
    for (size_t k = 0; k < N; ++k)
      if (fields[k].required && !(seen >> k & 1u))
        error("json.missing-field",
              fmt::format("{} is missing the required field '{}'", record, fields[k].key), at);
    return seen;
  }
  /// Reads an array: `each()` reads each element, with its index on the pointer path. False
  /// (reported, skipped) when the value is not an array.
  template <class F>
  bool array(std::string_view what, F each) {
    if (lx_.peek() != '[') {
      type_error(what);
      return false;
    }
    lx_.advance();
    bool first = true;
    for (size_t i = 0; lx_.next_element(first); ++i) {
      push(i);
      each();
      pop();
    }
    return true;
  }
  /// An array of records, appended to `out` (after those of the same key earlier in the
  /// object): each record's `at` is its offset, then `read(record)` reads it. False (reported,
  /// skipped) when the value is not an array.
  template <class T, class F>
  bool list(std::vector<T>& out, F read) {
    return array("an array", [&] {
      out.emplace_back();
      out.back().at = offset();
      read(out.back());
    });
  }
  /// list() of a top-level array, read by several threads when it is big (see
  /// ir/json_read_parallel.h): R is the format's reader (this one's class, made from the text),
  /// `read_one(R&, record)` reads one record (and sets its `at`).
  template <class R, typename T, typename Read>
  bool records(std::vector<T>& out, std::string_view key, Read read_one) {
    if (lx_.peek() != '[') {
      type_error("an array");
      return false;
    }
    std::vector<T> more;
    read_records<R>(
        more, key, read_one, [&](T& x, size_t) { read_one(static_cast<R&>(*this), x); },
        /*with_ids=*/false);
    if (out.empty()) {
      out = std::move(more);
    } else {
      out.insert(out.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
    }
    return true;
  }

  /// An integer in [lo, hi]; false (reported) for anything else.
  bool integer(int64_t& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
    const int c = lx_.peek();
    const size_t off = lx_.offset();
    if ((c == '-' || (c >= '0' && c <= '9')) && lx_.small_int(out))
      return (out >= lo && out <= hi) || out_of_range(out, lo, hi, off);
    return integer_rest(out, lo, hi, off);
  }
  /// A non-negative integer up to 2^64-1.
  bool unsigned64(uint64_t& out);
  /// A decimal string holding an integer up to 2^64-1 (PTO's 64-bit values).
  bool decimal_string(uint64_t& out);
  /// A string.
  bool string(std::string& out) {
    if (lx_.peek() != '"') {
      type_error("a string");
      return false;
    }
    lx_.read_string(out);
    return true;
  }
  /// A string as it stands in the text (which outlives `out`), its escapes not decoded.
  bool raw_string(RawString& out) {
    if (lx_.peek() != '"') {
      type_error("a string");
      return false;
    }
    const size_t quote = lx_.offset();
    const std::string_view v = lx_.string_view_(value_scratch_);
    out.raw = std::string_view(text_.data() + quote + 1, lx_.offset() - quote - 2);
    out.escaped = v.data() != out.raw.data();
    return true;
  }
  /// A string, as a view that the next read may end.
  bool text(std::string_view& out) {
    if (lx_.peek() != '"') {
      type_error("a string");
      return false;
    }
    out = lx_.string_view_(value_scratch_);
    return true;
  }
  /// A boolean.
  bool boolean(bool& out);
  /// A list of integers in [lo, hi].
  bool int_list(std::vector<int64_t>& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX) {
    out.clear();
    return int_list_to(lo, hi, [&](int64_t v) { out.push_back(v); });
  }
  /// A list of integers in [lo, hi], each handed to `put(v)`.
  template <class Put>
  bool int_list_to(int64_t lo, int64_t hi, Put put) {
    if (lx_.peek() == '[') {  // the common list: short, plain integers in range, read at once
      const size_t at = lx_.offset();
      std::array<int64_t, 16> v;
      const int n = lx_.small_int_list(v.data(), static_cast<int>(v.size()));
      if (n >= 0 &&
          std::all_of(v.begin(), v.begin() + n, [&](int64_t x) { return x >= lo && x <= hi; })) {
        for (int k = 0; k < n; ++k) put(v[static_cast<size_t>(k)]);
        return true;
      }
      lx_.seek(at);
    }
    bool ok = true;
    const bool is_array = array("an array of integers", [&] {
      int64_t v = 0;
      if (integer(v, lo, hi)) {
        put(v);
      } else {
        ok = false;
      }
    });
    return is_array && ok;
  }
  /// Skips the next value.
  void skip() { skip_any(0); }

  /// Reports an error at `offset` (the current pointer).
  void error(std::string code, std::string message, size_t offset) {
    JsonReader::error(std::move(code), std::move(message), offset);
  }
  /// Reports a warning at `offset`.
  void warn(std::string code, std::string message, size_t offset) {
    JsonReader::warn(std::move(code), std::move(message), offset);
  }
  /// Reports an error with an explicit pointer.
  void error_at(std::string code, std::string message, std::string pointer, size_t offset);
  /// "expected X, got Y" at the next value, which is skipped.
  void type_error(std::string_view expected);
  /// True once an error has been reported.
  bool failed() const { return n_errors_ > 0; }

 private:
  void run_document(std::string_view what, const std::function<void()>& read);
  bool integer_rest(int64_t& out, int64_t lo, int64_t hi, size_t off);
  bool out_of_range(int64_t v, int64_t lo, int64_t hi, size_t off);
  void skip_any(size_t depth);
};

}  // namespace amk::ir
