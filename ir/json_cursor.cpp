#include "ir/json_cursor.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "ir/json_lexer.h"

namespace amk::ir {
namespace {

constexpr size_t kMaxErrors = 100;
constexpr size_t kMaxDepth = 256;

struct TooManyErrors {};

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

struct JsonCursor::Impl {
  explicit Impl(std::string_view t) : text(t), lx(t) {}
  struct Frame {
    bool array;
    bool pushed = false;  // a key or index of this level is on the path
    bool first = true;
    size_t index = 0;
  };
  std::string_view text;
  detail::Lexer lx;
  std::vector<Frame> frames;
  std::vector<std::string> path;  // one segment per pushed frame member
  std::string key_scratch;
  Diagnostics diags;
  std::vector<size_t> offsets;
  size_t errors = 0;

  void add(Severity sev, std::string code, std::string msg, std::string ptr, size_t off,
           bool past_cap = false) {
    if (sev == Severity::Error) {
      if (errors >= kMaxErrors && !past_cap) throw TooManyErrors{};
      ++errors;
    }
    Diagnostic d = ir::error(std::move(code), std::move(msg), std::move(ptr));
    d.severity = sev;
    diags.push_back(std::move(d));
    offsets.push_back(off);
  }
  std::string pointer() const {
    std::string out;
    for (const std::string& s : path) {
      out += '/';
      out += s;
    }
    return out;
  }
  void fill_line_columns() { ir::fill_line_columns(text, diags, offsets); }

  void skip(size_t depth) {
    if (depth > kMaxDepth) lx.fail(fmt::format("nesting deeper than {} levels", kMaxDepth));
    const int c = lx.peek();
    switch (c) {
      case '{': {
        lx.advance();
        bool first = true;
        std::string_view key;
        while (lx.next_key(key, key_scratch, first)) skip(depth + 1);
        return;
      }
      case '[': {
        lx.advance();
        bool first = true;
        while (lx.next_element(first)) skip(depth + 1);
        return;
      }
      case '"': {
        (void)lx.string_view_(key_scratch);
        return;
      }
      case 't':
        if (lx.literal("true")) return;
        break;
      case 'f':
        if (lx.literal("false")) return;
        break;
      case 'n':
        if (lx.literal("null")) return;
        break;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          (void)lx.number();
          return;
        }
        break;
    }
    lx.fail("Expecting value");
  }
};

JsonCursor::JsonCursor(std::string_view text) : m_(std::make_unique<Impl>(text)) {}
JsonCursor::~JsonCursor() = default;

Diagnostics JsonCursor::document(std::string_view what, const std::function<void()>& read) {
  Impl& m = *m_;
  try {
    if (m.text.size() >= 3 && std::memcmp(m.text.data(), "\xEF\xBB\xBF", 3) == 0) {
      m.add(Severity::Warning, "json.bom", "file starts with a UTF-8 byte-order mark (ignored)", "",
            0);
      m.lx.skip_bom();
    }
    const int c = m.lx.peek();
    if (c < 0) m.lx.fail("Expecting value (empty file)");
    const size_t off = m.lx.offset();
    if (c != '{') {
      m.skip(0);
      if (!m.lx.at_end()) m.lx.fail("Extra data");
      m.add(Severity::Error, "json.type",
            fmt::format("{} must be a JSON object, got {}", what, describe(m.text, off)), "", off);
    } else {
      read();
      if (!m.lx.at_end()) m.lx.fail("Extra data");
    }
  } catch (const detail::SyntaxError& e) {
    m.add(Severity::Error, "json.syntax", e.message, m.pointer(), e.offset, true);
  } catch (const TooManyErrors&) {
    m.diags.push_back(
        ir::error("json.too-many-errors", fmt::format("stopped after {} errors", kMaxErrors)));
    m.offsets.push_back(std::string::npos);
  }
  m.fill_line_columns();
  return std::move(m.diags);
}

size_t JsonCursor::offset() {
  m_->lx.peek();
  return m_->lx.offset();
}

std::string JsonCursor::pointer() const {
  return m_->pointer();
}

bool JsonCursor::null() {
  return m_->lx.peek() == 'n' && m_->lx.literal("null");
}

bool JsonCursor::begin_object(std::string_view what) {
  Impl& m = *m_;
  if (m.lx.peek() != '{') {
    type_error(what);
    return false;
  }
  if (m.frames.size() >= kMaxDepth) m.lx.fail("nesting too deep");
  m.lx.advance();
  m.frames.push_back({false});
  return true;
}

bool JsonCursor::next_key(std::string_view& key) {
  Impl& m = *m_;
  Impl::Frame& f = m.frames.back();
  if (f.pushed) {
    m.path.pop_back();
    f.pushed = false;
  }
  if (!m.lx.next_key(key, m.key_scratch, f.first)) {
    m.frames.pop_back();
    return false;
  }
  m.path.push_back(pointer_token(key));
  f.pushed = true;
  return true;
}

bool JsonCursor::begin_array(std::string_view what) {
  Impl& m = *m_;
  if (m.lx.peek() != '[') {
    type_error(what);
    return false;
  }
  if (m.frames.size() >= kMaxDepth) m.lx.fail("nesting too deep");
  m.lx.advance();
  m.frames.push_back({true});
  return true;
}

bool JsonCursor::next_element() {
  Impl& m = *m_;
  Impl::Frame& f = m.frames.back();
  if (f.pushed) {
    m.path.pop_back();
    f.pushed = false;
    ++f.index;
  }
  if (!m.lx.next_element(f.first)) {
    m.frames.pop_back();
    return false;
  }
  m.path.push_back(std::to_string(f.index));
  f.pushed = true;
  return true;
}

size_t JsonCursor::index() const {
  return m_->frames.empty() ? 0 : m_->frames.back().index;
}

bool JsonCursor::integer(int64_t& out, int64_t lo, int64_t hi) {
  Impl& m = *m_;
  const int c = m.lx.peek();
  const size_t off = m.lx.offset();
  if (c != '-' && (c < '0' || c > '9')) {
    type_error("an integer");
    return false;
  }
  if (!m.lx.small_int(out)) {
    detail::NumTok t = m.lx.number();
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
  }
  if (out < lo || out > hi) {
    error("json.int-range", fmt::format("integer {} is out of range [{}, {}]", out, lo, hi), off);
    return false;
  }
  return true;
}

bool JsonCursor::unsigned64(uint64_t& out) {
  Impl& m = *m_;
  const int c = m.lx.peek();
  const size_t off = m.lx.offset();
  if (c != '-' && (c < '0' || c > '9')) {
    type_error("a non-negative integer");
    return false;
  }
  detail::NumTok t = m.lx.number();
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
  Impl& m = *m_;
  const size_t off = m.lx.offset();
  if (m.lx.peek() != '"') {
    type_error("a decimal string");
    return false;
  }
  const std::string_view s = m.lx.string_view_(m.key_scratch);
  auto r = std::from_chars(s.data(), s.data() + s.size(), out);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    error("json.type",
          fmt::format("expected a decimal string of an integer in [0, 2^64), got \"{}\"",
                      s.substr(0, 40)),
          off);
    return false;
  }
  return true;
}

bool JsonCursor::string(std::string& out) {
  Impl& m = *m_;
  if (m.lx.peek() != '"') {
    type_error("a string");
    return false;
  }
  m.lx.read_string(out);
  return true;
}

bool JsonCursor::boolean(bool& out) {
  Impl& m = *m_;
  const int c = m.lx.peek();
  if (c == 't' && m.lx.literal("true")) {
    out = true;
    return true;
  }
  if (c == 'f' && m.lx.literal("false")) {
    out = false;
    return true;
  }
  type_error("a boolean");
  return false;
}

bool JsonCursor::int_list(std::vector<int64_t>& out, int64_t lo, int64_t hi) {
  out.clear();
  if (!begin_array("an array of integers")) return false;
  bool ok = true;
  while (next_element()) {
    int64_t v = 0;
    if (integer(v, lo, hi)) {
      out.push_back(v);
    } else {
      ok = false;
    }
  }
  return ok;
}

void JsonCursor::skip() {
  m_->skip(0);
}

void JsonCursor::error(std::string code, std::string message, size_t offset) {
  m_->add(Severity::Error, std::move(code), std::move(message), m_->pointer(), offset);
}

void JsonCursor::warn(std::string code, std::string message, size_t offset) {
  m_->add(Severity::Warning, std::move(code), std::move(message), m_->pointer(), offset);
}

void JsonCursor::error_at(std::string code, std::string message, std::string pointer,
                          size_t offset) {
  m_->add(Severity::Error, std::move(code), std::move(message), std::move(pointer), offset);
}

void JsonCursor::type_error(std::string_view expected) {
  Impl& m = *m_;
  m.lx.peek();
  const size_t off = m.lx.offset();
  error("json.type", fmt::format("expected {}, got {}", expected, describe(m.text, off)), off);
  m.skip(0);
}

bool JsonCursor::failed() const {
  return m_->errors > 0;
}

std::pair<int, int> line_column(std::string_view text, size_t offset) {
  int line = 1, col = 1;
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

void fill_line_columns(std::string_view text, Diagnostics& d, const std::vector<size_t>& offsets) {
  std::vector<size_t> order(d.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
  size_t pos = 0;
  int line = 1, col = 1;
  for (size_t k : order) {
    size_t off = offsets[k];
    if (off == std::string::npos) continue;
    off = std::min(off, text.size());
    for (; pos < off; ++pos) {
      if (text[pos] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    d[k].line = line;
    d[k].column = col;
  }
}

std::string_view json_kind_at(std::string_view text, size_t off) {
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

}  // namespace amk::ir
