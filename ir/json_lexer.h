// Internal: the JSON lexer of the program reader (json_read.cpp): whitespace skipped with SSE2,
// strings as views into the text unless they hold escapes, numbers kept as Python's json reads
// them (int, big int or float), and a syntax error as Python's json words it, at its offset.
#pragma once

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <fmt/format.h>

#include "ir/pyjson.h"

namespace amk::ir::detail {

/// The first `needle` in `text` at or after `from` (npos when there is none). A long text is cut
/// into blocks that several threads search in order, stopping at the first block with a match:
/// the first read of a freshly mapped file's pages is what a scan of it costs most.
size_t find_in_parallel(std::string_view text, std::string_view needle, size_t from);

struct SyntaxError {
  size_t offset;
  std::string message;
};

// A number token: an int that fits int64, a non-negative int that fits uint64, a bigger int, or a
// float (Python's json makes anything with '.', 'e' or a NaN/Infinity literal a float).
struct NumTok {
  enum class Kind { Int, UInt, BigInt, Float } kind = Kind::Int;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view text;
};

class Lexer {
 public:
  explicit Lexer(std::string_view t) : b_(t.data()), p_(t.data()), e_(t.data() + t.size()) {}

  size_t offset() const { return static_cast<size_t>(p_ - b_); }
  /// The offset of the opening quote of the key next_key read last.
  size_t key_offset() const { return static_cast<size_t>(key_quote_ - b_); }
  /// Moves to byte `off` of the text (a position another pass found).
  void seek(size_t off) { p_ = b_ + off; }
  bool at_end() {
    ws();
    return p_ >= e_;
  }
  void skip_bom() {
    if (e_ - p_ >= 3 && std::memcmp(p_, "\xEF\xBB\xBF", 3) == 0) p_ += 3;
  }

  [[gnu::always_inline]] void ws() {
    // Most calls stand at a token already (after a key's ':' or a value's ','): no whitespace.
    if (p_<e_&& static_cast<unsigned char>(*p_)> ' ') return;
    if (e_ - p_ >= 2 && *p_ == ' ' && static_cast<unsigned char>(p_[1]) > ' ') {  // ": " in a pair
      ++p_;
      return;
    }
    ws_rest();
  }
  // ws() past its common cases: a new line and its indentation, or any other blanks.
  [[gnu::noinline]] void ws_rest() {
    if (p_ < e_ && *p_ == '\n') ++p_;  // a new line, then (below) its indentation
    // Indentation dominates canonical files: skip runs of spaces first, then the rare others.
    for (;;) {
#ifdef __SSE2__
      const __m128i sp = _mm_set1_epi8(' ');
      while (e_ - p_ >= 16) {
        auto m = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p_)), sp)));
        if (m != 0xFFFF) {
          p_ += __builtin_ctz(~m);
          break;
        }
        p_ += 16;
      }
#endif
      while (p_ < e_ && *p_ == ' ') ++p_;
      if (p_ < e_ && (*p_ == '\n' || *p_ == '\r' || *p_ == '\t')) {
        ++p_;
        continue;
      }
      return;
    }
  }
  [[gnu::always_inline]] int peek() {
    ws();
    return p_ < e_ ? static_cast<unsigned char>(*p_) : -1;
  }
  [[noreturn]] void fail(std::string msg) const {
    throw SyntaxError{offset(), std::move(msg)};
  }

  // Object/array iteration: call with first=true after the opening bracket was consumed.
  bool next_key(std::string_view& key, std::string& scratch, bool& first) {
    int c = peek();
    if (c == '}') {
      ++p_;
      return false;
    }
    if (!first) {
      if (c != ',') fail("Expecting ',' delimiter");
      ++p_;
      c = peek();
    }
    if (c != '"') fail("Expecting property name enclosed in double quotes");
    key_quote_ = p_;
    key = string_view_(scratch);
    if (peek() != ':') fail("Expecting ':' delimiter");
    ++p_;
    first = false;
    return true;
  }
  bool next_element(bool& first) {
    int c = peek();
    if (c == ']') {
      ++p_;
      return false;
    }
    if (!first) {
      if (c != ',') fail("Expecting ',' delimiter");
      ++p_;
      peek();
    }
    first = false;
    return true;
  }
  // Reads a string literal at p_ (which is '"'); returns a view into the input when it has no
  // escapes, else into `scratch`.
  std::string_view string_view_(std::string& scratch) {
    const char* start = ++p_;
    const char* q = plain_run(p_);
    if (q < e_ && *q == '"') {  // no escape, no control or non-ASCII byte: the common case
      p_ = q + 1;
      return {start, static_cast<size_t>(q - start)};
    }
    return string_rest(scratch, start, q);
  }
  void read_string(std::string& out) {
    std::string_view v = string_view_(out);
    if (v.data() != out.data()) out.assign(v);
  }

  /// A plain integer of at most 18 digits at the position (no fraction, no exponent): read into
  /// `out`. False, with nothing consumed, for anything else (number() then reads it).
  bool small_int(int64_t& out) {
    const char* q = p_;
    const bool neg = q < e_ && *q == '-';
    if (neg) ++q;
    const char* digits = q;
    uint64_t v = 0;
    if (std::endian::native == std::endian::little && e_ - q >= 8) q += eight_digits(q, v);
    while (q < e_ && static_cast<unsigned>(*q - '0') < 10 && q - digits < 19)
      v = v * 10 + static_cast<uint64_t>(*q++ - '0');
    const auto n = q - digits;
    if (n == 0 || n > 18 || (n > 1 && *digits == '0')) return false;
    if (q < e_ && (*q == '.' || *q == 'e' || *q == 'E' || static_cast<unsigned>(*q - '0') < 10))
      return false;
    p_ = q;
    out = neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    return true;
  }

  /// A list of at most `max` integers, each one small_int() reads, from the '[' at the position
  /// through its ']': their count, with their values in `out`; -1, with nothing consumed, for
  /// any other list or value (read then one element after the other).
  int small_int_list(int64_t* out, int max) {
    const char* const start = p_;
    ++p_;
    ws();
    if (p_ < e_ && *p_ == ']') {
      ++p_;
      return 0;
    }
    for (int n = 0; n < max && small_int(out[n]);) {
      ++n;
      ws();
      const char c = p_ < e_ ? *p_++ : '\0';
      if (c == ']') return n;
      if (c != ',') break;
      ws();
    }
    p_ = start;
    return -1;
  }

  /// The digits that lead the 8 bytes at `q` (all readable), at most 8: their count, and their
  /// value in `v`.
  static int eight_digits(const char* q, uint64_t& v) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    if constexpr (std::endian::native != std::endian::little) w = __builtin_bswap64(w);
    constexpr uint64_t kHigh = 0xF0F0F0F0F0F0F0F0u, kZeros = 0x3030303030303030u;
    // A byte is a digit when it is 0x3_ and stays 0x3_ plus 6. A carry out of a non-digit byte
    // only reaches the bytes after it, which are not read.
    const uint64_t other = ((w & kHigh) ^ kZeros) | (((w + 0x0606060606060606u) & kHigh) ^ kZeros);
    const int n = other ? __builtin_ctzll(other) / 8 : 8;
    if (n == 0) return 0;
    // The digits' values, moved to the word's top bytes (the first digit lowest), then joined in
    // pairs, fours and eights.
    uint64_t d = (w - kZeros) << (8 * (8 - n));
    d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFu;
    d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFu;
    v = (d * 10000 + (d >> 32)) & 0xFFFFFFFFu;
    return n;
  }

  /// `s` as a decimal integer up to 2^64-1, read as std::from_chars reads an unsigned one that
  /// must fill `s` (digits only, leading zeros allowed); false for anything else.
  static bool decimal_u64(std::string_view s, uint64_t& out) {
    const char* q = s.data();
    const char* const e = q + s.size();
    if (q == e) return false;
    while (q < e && *q == '0') ++q;
    if (e - q > 20) return false;  // 2^64 has 20 digits
    uint64_t v = 0;
    while (e - q >= 8) {
      uint64_t w = 0;
      if (eight_digits(q, w) != 8 || __builtin_mul_overflow(v, 100000000u, &v) ||
          __builtin_add_overflow(v, w, &v))
        return false;
      q += 8;
    }
    for (; q < e; ++q) {
      const auto d = static_cast<unsigned>(*q - '0');
      if (d > 9 || __builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, d, &v))
        return false;
    }
    out = v;
    return true;
  }

  NumTok number() {
    const char* s = p_;
    NumTok t;
    bool neg = false;
    if (p_ < e_ && *p_ == '-') {
      neg = true;
      ++p_;
      if (e_ - p_ >= 8 && std::memcmp(p_, "Infinity", 8) == 0) {
        p_ += 8;
        t.kind = NumTok::Kind::Float;
        t.d = -std::numeric_limits<double>::infinity();
        t.text = {s, static_cast<size_t>(p_ - s)};
        return t;
      }
    }
    if (p_ >= e_ || *p_ < '0' || *p_ > '9') fail("Expecting value");
    const char* digits = p_;
    uint64_t mag = 0;  // exact while there are at most 19 digits (below 10^19 < 2^64)
    if (*p_ == '0') {
      ++p_;
      if (p_ < e_ && *p_ >= '0' && *p_ <= '9') fail("Invalid number: leading zero");
    } else {
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9')
        mag = mag * 10 + static_cast<uint64_t>(*p_++ - '0');
    }
    const char* int_end = p_;
    bool is_float = false;
    if (p_ < e_ && *p_ == '.') {
      ++p_;
      if (p_ >= e_ || *p_ < '0' || *p_ > '9') fail("Invalid number: digits expected after '.'");
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
      is_float = true;
    }
    if (p_ < e_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < e_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= e_ || *p_ < '0' || *p_ > '9') fail("Invalid number: digits expected in exponent");
      while (p_ < e_ && *p_ >= '0' && *p_ <= '9') ++p_;
      is_float = true;
    }
    t.text = {s, static_cast<size_t>(p_ - s)};
    if (is_float) {
      t.kind = NumTok::Kind::Float;
      auto r = std::from_chars(s, p_, t.d);
      if (r.ec != std::errc()) t.d = std::strtod(std::string(t.text).c_str(), nullptr);
      return t;
    }
    bool big = false;
    if (int_end - digits > 19) {  // may not fit: again, with the overflow checked
      mag = 0;
      for (const char* q = digits; q < int_end; ++q) {
        auto dgt = static_cast<uint64_t>(*q - '0');
        if (mag > (std::numeric_limits<uint64_t>::max() - dgt) / 10) {
          big = true;
          break;
        }
        mag = mag * 10 + dgt;
      }
    }
    if (big) {
      t.kind = NumTok::Kind::BigInt;
    } else if (neg) {
      if (mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1) {
        t.kind = NumTok::Kind::Int;
        t.i = mag == static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + 1
                  ? std::numeric_limits<int64_t>::min()
                  : -static_cast<int64_t>(mag);
      } else {
        t.kind = NumTok::Kind::BigInt;
      }
    } else if (mag <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      t.kind = NumTok::Kind::Int;
      t.i = static_cast<int64_t>(mag);
    } else {
      t.kind = NumTok::Kind::UInt;
      t.u = mag;
    }
    return t;
  }

  // true/false/null/NaN/Infinity; returns the literal's first char, or 0 when none matches.
  bool literal(std::string_view lit) {
    if (static_cast<size_t>(e_ - p_) >= lit.size() &&
        std::memcmp(p_, lit.data(), lit.size()) == 0) {
      p_ += lit.size();
      return true;
    }
    return false;
  }
  /// literal() for the first `n` (at most 64) of 64 bytes at `padded`, compared sixteen at a time.
  bool literal64(const char* padded, size_t n) {
#ifdef __SSE2__
    if (e_ - p_ >= 64) {
      for (size_t i = 0; i < n; i += 16) {
        const auto m = static_cast<unsigned>(_mm_movemask_epi8(
            _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p_ + i)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(padded + i)))));
        const unsigned need = n - i >= 16 ? 0xFFFFu : (1u << (n - i)) - 1;
        if ((m & need) != need) return false;
      }
      p_ += n;
      return true;
    }
#endif
    return literal({padded, n});
  }
  void advance() {
    ++p_;
  }

 private:
  // The rest of string_view_ from q, the first byte plain_run stopped at: UTF-8 checked, escapes
  // decoded into `scratch`, errors reported.
  [[gnu::noinline]] std::string_view string_rest(std::string& scratch, const char* start,
                                                 const char* q) {
    for (;; q = plain_run(q)) {
      if (q >= e_) fail_at(start - 1, "Unterminated string starting at");
      auto c = static_cast<unsigned char>(*q);
      if (c == '"') {
        p_ = q + 1;
        return {start, static_cast<size_t>(q - start)};
      }
      if (c == '\\') break;
      if (c < 0x20) fail_at(q, "Invalid control character in string");
      q = check_utf8(q);  // plain_run stops only at those bytes, at a non-ASCII one or the end
    }
    scratch.assign(start, q);
    p_ = q;
    decode_rest(scratch, start);
    return scratch;
  }

  // The first byte at or after q that a string cannot simply hold ('"', '\\', a control byte or
  // a non-ASCII one), or the end of the text: sixteen bytes at a time where there are as many.
  const char* plain_run(const char* q) const {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (e_ - q >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      // Signed: the bytes 0x80-0xFF are negative, so below 0x20 as well as the control bytes.
      const __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                       _mm_cmplt_epi8(v, space));
      const auto m = static_cast<unsigned>(_mm_movemask_epi8(special));
      if (m != 0) return q + __builtin_ctz(m);
      q += 16;
    }
#endif
    while (q < e_) {
      const auto c = static_cast<unsigned char>(*q);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return q;
      ++q;
    }
    return q;
  }

  [[noreturn]] void fail_at(const char* at, std::string msg) const {
    throw SyntaxError{static_cast<size_t>(at - b_), std::move(msg)};
  }

  // Validates one UTF-8 sequence starting at q (strict: no overlongs, surrogates or > U+10FFFF).
  const char* check_utf8(const char* q) const {
    auto b0 = static_cast<unsigned char>(q[0]);
    int n = 0;
    uint32_t cp = 0;
    if ((b0 & 0xE0) == 0xC0) {
      n = 1;
      cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 2;
      cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 3;
      cp = b0 & 0x07;
    } else {
      fail_at(q, "Invalid UTF-8 byte in string");
    }
    if (e_ - q <= n) fail_at(q, "Truncated UTF-8 sequence in string");
    for (int k = 1; k <= n; ++k) {
      auto c = static_cast<unsigned char>(q[k]);
      if ((c & 0xC0) != 0x80) fail_at(q, "Invalid UTF-8 sequence in string");
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000))
      fail_at(q, "Invalid UTF-8 sequence in string");
    return q + n + 1;
  }

  uint32_t hex4() {
    if (e_ - p_ < 4) fail("Invalid \\uXXXX escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = p_[k];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        fail("Invalid \\uXXXX escape");
      }
    }
    p_ += 4;
    return v;
  }

  void decode_rest(std::string& out, const char* start) {
    for (;;) {
      if (p_ >= e_) fail_at(start - 1, "Unterminated string starting at");
      auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        ++p_;
        return;
      }
      if (c < 0x20) fail("Invalid control character in string");
      if (c >= 0x80) {
        const char* nx = check_utf8(p_);
        out.append(p_, nx);
        p_ = nx;
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++p_;
        continue;
      }
      ++p_;
      if (p_ >= e_) fail_at(start - 1, "Unterminated string starting at");
      char esc = *p_++;
      switch (esc) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && e_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
            const char* save = p_;
            p_ += 2;
            uint32_t lo = hex4();
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              p_ = save;
            }
          }
          append_utf8(out, cp);
          break;
        }
        default:
          p_ -= 2;
          fail("Invalid \\escape");
      }
    }
  }

  const char* b_;
  const char* p_;
  const char* e_;
  const char* key_quote_ = nullptr;
};

}  // namespace amk::ir::detail
