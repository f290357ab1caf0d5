#include "ir/pyjson.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace amk::ir {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_u16(std::string& out, unsigned cp) {
  out += "\\u";
  out += kHex[(cp >> 12) & 0xF];
  out += kHex[(cp >> 8) & 0xF];
  out += kHex[(cp >> 4) & 0xF];
  out += kHex[cp & 0xF];
}

// Decodes one UTF-8 (or WTF-8: surrogates allowed) sequence at s[i]; advances i. Invalid bytes
// come back as themselves (the reader never produces them; in-memory strings might).
unsigned decode_utf8(std::string_view s, size_t& i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) -> int {
    if (i + k >= s.size()) return -1;
    auto c = static_cast<unsigned char>(s[i + k]);
    return (c & 0xC0) == 0x80 ? (c & 0x3F) : -1;
  };
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0) {
    int c1 = cont(1);
    if (c1 >= 0) {
      i += 2;
      return ((b0 & 0x1Fu) << 6) | static_cast<unsigned>(c1);
    }
  } else if ((b0 & 0xF0) == 0xE0) {
    int c1 = cont(1), c2 = cont(2);
    if (c1 >= 0 && c2 >= 0) {
      i += 3;
      return ((b0 & 0x0Fu) << 12) | (static_cast<unsigned>(c1) << 6) | static_cast<unsigned>(c2);
    }
  } else if ((b0 & 0xF8) == 0xF0) {
    int c1 = cont(1), c2 = cont(2), c3 = cont(3);
    if (c1 >= 0 && c2 >= 0 && c3 >= 0) {
      i += 4;
      return ((b0 & 0x07u) << 18) | (static_cast<unsigned>(c1) << 12) |
             (static_cast<unsigned>(c2) << 6) | static_cast<unsigned>(c3);
    }
  }
  ++i;
  return b0;
}

template <typename T>
void append_int(std::string& out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// Appends the short escape JSON has for '"', '\\' and five control characters (json.dumps and
// nlohmann's dump use the same ones); false for any other byte.
bool append_short_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return true;
    case '\\':
      out += "\\\\";
      return true;
    case '\n':
      out += "\\n";
      return true;
    case '\r':
      out += "\\r";
      return true;
    case '\t':
      out += "\\t";
      return true;
    case '\b':
      out += "\\b";
      return true;
    case '\f':
      out += "\\f";
      return true;
    default:
      return false;
  }
}

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {  // includes lone surrogates (WTF-8), which Python strings allow
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

void append_py_float(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-Infinity" : "Infinity";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  bool neg = false;
  if (!sci.empty() && sci[0] == '-') {
    neg = true;
    sci.remove_prefix(1);
  }
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c != '.') digits += c;
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  int decpt = exp10 + 1;
  int nd = static_cast<int>(digits.size());
  if (neg) out += '-';
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += exp10 < 0 ? '-' : '+';
    int a = exp10 < 0 ? -exp10 : exp10;
    if (a < 10) out += '0';
    append_int(out, a);
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (decpt >= nd) {
    out += digits;
    out.append(static_cast<size_t>(decpt - nd), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<size_t>(decpt));
  }
}

std::string py_float(double v) {
  std::string s;
  append_py_float(s, v);
  return s;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (append_short_escape(out, c)) {
      ++i;
      continue;
    }
    unsigned cp = decode_utf8(s, i);
    if (cp >= 0x10000) {
      unsigned v = cp - 0x10000;
      append_u16(out, 0xD800 + (v >> 10));
      append_u16(out, 0xDC00 + (v & 0x3FF));
    } else {
      append_u16(out, cp);
    }
  }
  out += '"';
}

void append_indent(std::string& out, int level) {
  out += '\n';
  out.append(static_cast<size_t>(2 * level), ' ');
}

namespace {

// True when s[i] starts a surrogate in its 3-byte form (ED A0-BF 80-BF): what amk's reader keeps
// of a lone "\ud800" escape, as Python's strings do.
bool wtf8_surrogate(std::string_view s, size_t i) {
  const auto b = [&](size_t k) {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u;
  };
  return b(0) == 0xED && b(1) >= 0xA0 && b(1) <= 0xBF && (b(2) & 0xC0) == 0x80;
}

// A JSON string literal as nlohmann's dump writes one (UTF-8 kept, the control characters
// escaped), except that a surrogate kept by the reader is its \uXXXX escape, where nlohmann's
// dump throws or writes U+FFFD; any other byte that is not UTF-8 (no reader gives one) is U+FFFD.
void append_json_text_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    size_t run = i;  // the run from i that is written as it is, copied at once
    for (size_t n; run < s.size();) {
      const auto c = static_cast<unsigned char>(s[run]);
      if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
        ++run;
      } else if (c >= 0x80 && (n = utf8_sequence(s, run)) > 0) {
        run += n;
      } else {
        break;
      }
    }
    out.append(s.data() + i, run - i);
    if (run == s.size()) break;
    i = run;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (wtf8_surrogate(s, i)) {
        append_u16(out, decode_utf8(s, i));
      } else {
        out += "\xEF\xBF\xBD";
        ++i;
      }
    } else {
      ++i;
      if (!append_short_escape(out, c)) append_u16(out, c);  // the other control characters
    }
  }
  out += '"';
}

// How a value is laid out: Python's json.dumps (ensure_ascii strings, repr floats) or nlohmann's
// dump (UTF-8 strings, its floats); `width` spaces a level on lines of their own (< 0: one line);
// `item` after each item but the last, `key` after each key.
struct Layout {
  bool python;
  int width;
  std::string_view item, key;
};

void append_string(std::string& out, std::string_view s, const Layout& l) {
  if (l.python) {
    append_json_string(out, s);
  } else {
    append_json_text_string(out, s);
  }
}

template <class J>
void append_value(std::string& out, const J& v, int level, const Layout& l) {
  using T = typename J::value_t;
  const auto next_line = [&](int at) {
    out += '\n';
    out.append(static_cast<size_t>(l.width * at), ' ');
  };
  switch (v.type()) {
    case T::null:
    case T::discarded:
    case T::binary:
      out += "null";
      return;
    case T::boolean:
      out += v.template get<bool>() ? "true" : "false";
      return;
    case T::number_integer:
      append_int(out, v.template get<int64_t>());
      return;
    case T::number_unsigned:
      append_int(out, v.template get<uint64_t>());
      return;
    case T::number_float:
      if (l.python) {
        append_py_float(out, v.template get<double>());
      } else {
        out += v.dump();  // nlohmann's own digits (null when not finite)
      }
      return;
    case T::string:
      append_string(out, v.template get_ref<const std::string&>(), l);
      return;
    case T::array:
    case T::object: {
      const bool object = v.is_object();
      if (v.empty()) {
        out += object ? "{}" : "[]";
        return;
      }
      out += object ? '{' : '[';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += l.item;
        first = false;
        if (l.width >= 0) next_line(level + 1);
        if (object) {
          append_string(out, it.key(), l);
          out += l.key;
        }
        append_value(out, it.value(), level + 1, l);
      }
      if (l.width >= 0) next_line(level);
      out += object ? '}' : ']';
      return;
    }
  }
}

constexpr Layout kPythonIndent2{true, 2, ",", ": "};
constexpr Layout kPythonLine{true, -1, ", ", ": "};

template <class J>
std::string dump_exact(const J& j, int indent) {
  std::string out;
  out.reserve(256);
  append_value(out, j, 0,
               indent < 0 ? Layout{false, -1, ",", ":"} : Layout{false, indent, ",", ": "});
  return out;
}

}  // namespace

void append_json_value(std::string& out, const nlohmann::ordered_json& v, int level) {
  append_value(out, v, level, kPythonIndent2);
}

std::string json_line(const nlohmann::ordered_json& v) {
  std::string out;
  append_value(out, v, 0, kPythonLine);
  return out;
}

std::string dump_text(const nlohmann::ordered_json& j, int indent) {
  return dump_exact(j, indent);
}

std::string dump_text(const nlohmann::json& j, int indent) {
  return dump_exact(j, indent);
}

std::string py_repr_str(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '\\' || c == static_cast<unsigned char>(q)) {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else {
      unsigned cp = decode_utf8(s, i);
      if (cp < 0xA0) {
        out += "\\x";
        out += kHex[(cp >> 4) & 0xF];
        out += kHex[cp & 0xF];
      } else if (cp >= 0xD800 && cp < 0xE000) {
        out += "\\u";
        for (int sh = 12; sh >= 0; sh -= 4) out += kHex[(cp >> sh) & 0xF];
      } else {
        append_utf8(out, cp);
      }
    }
  }
  out += q;
  return out;
}

std::string py_repr(const nlohmann::ordered_json& v) {
  using T = nlohmann::ordered_json::value_t;
  std::string out;
  switch (v.type()) {
    case T::null:
    case T::discarded:
    case T::binary:
      return "None";
    case T::boolean:
      return v.get<bool>() ? "True" : "False";
    case T::number_integer:
      append_int(out, v.get<int64_t>());
      return out;
    case T::number_unsigned:
      append_int(out, v.get<uint64_t>());
      return out;
    case T::number_float: {
      double d = v.get<double>();
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
      return py_float(d);
    }
    case T::string:
      return py_repr_str(v.get_ref<const std::string&>());
    case T::array: {
      out = "[";
      for (size_t k = 0; k < v.size(); ++k) {
        if (k) out += ", ";
        out += py_repr(v[k]);
      }
      return out + "]";
    }
    case T::object: {
      out = "{";
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += py_repr_str(it.key()) + ": " + py_repr(it.value());
      }
      return out + "}";
    }
  }
  return out;
}

std::string py_round2(double x) {
  if (!std::isfinite(x)) return py_float(x);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return py_float(std::strtod(buf, nullptr));
}

size_t utf8_sequence(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const unsigned b0 = at(0);
  if (i >= s.size()) return 0;
  if (b0 < 0x80) return 1;
  auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return at(k) >= lo && at(k) <= hi;
  };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

bool is_utf8(std::string_view s) {
  size_t i = 0;
  for (size_t n; i < s.size() && (n = utf8_sequence(s, i)) > 0;) i += n;
  return i == s.size();
}

void append_valid_utf8(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t run = i;  // the valid run from i, copied at once
    for (size_t n; run < s.size() && (n = utf8_sequence(s, run)) > 0;) run += n;
    out.append(s.data() + i, run - i);
    if (run == s.size()) break;
    out += "\xEF\xBF\xBD";
    i = run + (wtf8_surrogate(s, run) ? 3 : 1);  // a surrogate's 3-byte form is one character
  }
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_valid_utf8(out, s);
  return out;
}

}  // namespace amk::ir
