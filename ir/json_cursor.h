// A pull reader over one JSON document for schema-driven readers of other file formats (MPK's
// task_graph.json, PTO's deps.json): the program reader's lexer underneath, and every problem a
// diagnostic with a JSON pointer and a line:column, as the program reader reports them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/result.h"

namespace amk::ir {

/// Walks one JSON text. Structure: begin_object()/next_key() and begin_array()/next_element()
/// keep the pointer path; a value read with the wrong type is reported (json.type) and skipped.
/// Syntax errors end the document (json.syntax); after 100 errors it stops (json.too-many-errors).
class JsonCursor {
 public:
  /// A cursor at the start of `text` (which must outlive it).
  explicit JsonCursor(std::string_view text);
  ~JsonCursor();
  JsonCursor(const JsonCursor&) = delete;
  JsonCursor& operator=(const JsonCursor&) = delete;

  /// Runs `read` over the document, which must be one object (`what` names it: "an MPK task
  /// graph"); returns the diagnostics with line:column filled in.
  Diagnostics document(std::string_view what, const std::function<void()>& read);

  /// The byte offset of the next value.
  size_t offset();
  /// The current JSON pointer.
  std::string pointer() const;
  /// True (and the value consumed) when the next value is null.
  bool null();
  /// Enters an object; false (reported, skipped) when the value is not one.
  bool begin_object(std::string_view what);
  /// The next member's key (its value is next), or false at the object's end.
  bool next_key(std::string_view& key);
  /// Enters an array; false (reported, skipped) when the value is not one.
  bool begin_array(std::string_view what);
  /// True when another element follows (it is next), false at the array's end.
  bool next_element();
  /// The index of the current array element.
  size_t index() const;

  /// An integer in [lo, hi]; false (reported) for anything else.
  bool integer(int64_t& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
  /// A non-negative integer up to 2^64-1.
  bool unsigned64(uint64_t& out);
  /// A decimal string holding an integer up to 2^64-1 (PTO's 64-bit values).
  bool decimal_string(uint64_t& out);
  /// A string.
  bool string(std::string& out);
  /// A boolean.
  bool boolean(bool& out);
  /// A list of integers in [lo, hi].
  bool int_list(std::vector<int64_t>& out, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
  /// Skips the next value.
  void skip();

  /// Reports an error at `offset` (the current pointer).
  void error(std::string code, std::string message, size_t offset);
  /// Reports a warning at `offset`.
  void warn(std::string code, std::string message, size_t offset);
  /// Reports an error with an explicit pointer.
  void error_at(std::string code, std::string message, std::string pointer, size_t offset);
  /// "expected X, got Y" at the next value, which is skipped.
  void type_error(std::string_view expected);
  /// True once an error has been reported.
  bool failed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_;
};

/// Line and column (1-based) of byte `offset` in `text`.
/// What the JSON value starting at byte `off` of `text` is, as messages name it ("an object",
/// "an array", "a string", "a boolean", "null", "a number"; "nothing" past the end).
std::string_view json_kind_at(std::string_view text, size_t off);
std::pair<int, int> line_column(std::string_view text, size_t offset);
/// Sets line:column on each of `d` from its byte offset into `text` (offsets[k] for d[k];
/// std::string::npos: none), in one pass over the text.
void fill_line_columns(std::string_view text, Diagnostics& d, const std::vector<size_t>& offsets);

}  // namespace amk::ir
