#include "ir/json_cursor.h"

#include <cstring>

#include <fmt/format.h>

namespace amk::ir {
namespace {

// The value at `off`: its kind, or a number's (or a stray token's) own text.
std::string describe(std::string_view text, size_t off) {
  if (const std::string_view kind = json_kind_at(text, off); kind != "a number")
    return std::string(kind);
  size_t end = off;
  while (end < text.size() && end - off < 40 && std::strchr(",]} \n\r\t", text[end]) == nullptr)
    ++end;
  return std::string(text.substr(off, end - off));
}

}  // namespace

void JsonCursor::run_document(std::string_view what, const std::function<void()>& read) {
  read_document(
      what, [&] { skip_any(0); }, [&](size_t off) { return describe(text_, off); },
      [&](size_t) { read(); });
}

// Any value, checked for syntax only: a number of any size, no NaN or Infinity.
void JsonCursor::skip_any(size_t depth) {
  if (depth > static_cast<size_t>(detail::kMaxDepth))
    lx_.fail(fmt::format("nesting deeper than {} levels", detail::kMaxDepth));
  const int c = lx_.peek();
  switch (c) {
    case '{': {
      lx_.advance();
      bool first = true;
      std::string_view key;
      while (lx_.next_key(key, key_scratch_, first)) skip_any(depth + 1);
      return;
    }
    case '[': {
      lx_.advance();
      bool first = true;
      while (lx_.next_element(first)) skip_any(depth + 1);
      return;
    }
    case '"': {
      (void)lx_.string_view_(key_scratch_);
      return;
    }
    case 't':
      if (lx_.literal("true")) return;
      break;
    case 'f':
      if (lx_.literal("false")) return;
      break;
    case 'n':
      if (lx_.literal("null")) return;
      break;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) {
        (void)lx_.number();
        return;
      }
      break;
  }
  lx_.fail("Expecting value");
}

bool JsonCursor::out_of_range(int64_t v, int64_t lo, int64_t hi, size_t off) {
  error("json.int-range", fmt::format("integer {} is out of range [{}, {}]", v, lo, hi), off);
  return false;
}

// integer() past its fast path: not a number, a float, a big one, or one of more than 18 digits.
bool JsonCursor::integer_rest(int64_t& out, int64_t lo, int64_t hi, size_t off) {
  const int c = lx_.peek();
  if (c != '-' && (c < '0' || c > '9')) {
    type_error("an integer");
    return false;
  }
  const detail::NumTok t = lx_.number();
  if (t.kind == detail::NumTok::Kind::Float) {
    error("json.type", fmt::format("expected an integer, got {}", t.text), off);
    return false;
  }
  if (t.kind != detail::NumTok::Kind::Int) {
    error("json.int-range", fmt::format("integer {} is out of range [{}, {}]", t.text, lo, hi),
          off);
    return false;
  }
  out = t.i;
  return (out >= lo && out <= hi) || out_of_range(out, lo, hi, off);
}

bool JsonCursor::unsigned64(uint64_t& out) {
  const int c = lx_.peek();
  const size_t off = lx_.offset();
  if (c != '-' && (c < '0' || c > '9')) {
    type_error("a non-negative integer");
    return false;
  }
  const detail::NumTok t = lx_.number();
  if (t.kind == detail::NumTok::Kind::Int && t.i >= 0) {
    out = static_cast<uint64_t>(t.i);
    return true;
  }
  if (t.kind == detail::NumTok::Kind::UInt) {
    out = t.u;
    return true;
  }
  error(t.kind == detail::NumTok::Kind::Float ? "json.type" : "json.int-range",
        fmt::format("expected an integer in [0, 2^64), got {}", t.text), off);
  return false;
}

bool JsonCursor::decimal_string(uint64_t& out) {
  const size_t off = lx_.offset();
  if (lx_.peek() != '"') {
    type_error("a decimal string");
    return false;
  }
  const std::string_view s = lx_.string_view_(value_scratch_);
  if (!detail::Lexer::decimal_u64(s, out)) {
    error("json.type",
          fmt::format("expected a decimal string of an integer in [0, 2^64), got \"{}\"",
                      s.substr(0, 40)),
          off);
    return false;
  }
  return true;
}

bool JsonCursor::boolean(bool& out) {
  if (bool_literal(out)) return true;
  type_error("a boolean");
  return false;
}

std::string RawString::value() const {
  if (!escaped) return std::string(raw);
  // An escaped one is JsonCursor::raw_string's view, between the quotes of its string.
  detail::Lexer lx({raw.data() - 1, raw.size() + 2});
  std::string out;
  lx.read_string(out);
  return out;
}

void JsonCursor::error_at(std::string code, std::string message, std::string pointer,
                          size_t offset) {
  if (n_errors_ >= detail::kMaxErrors) throw detail::TooManyErrors{};
  ++n_errors_;
  diags_.push_back(ir::error(std::move(code), std::move(message), std::move(pointer)));
  offsets_.push_back(offset);
}

void JsonCursor::type_error(std::string_view expected) {
  lx_.peek();
  const size_t off = lx_.offset();
  error("json.type", fmt::format("expected {}, got {}", expected, describe(text_, off)), off);
  skip_any(0);
}

}  // namespace amk::ir
