// Short byte strings as one little-endian word: how amk compares and images keys of a few bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace amk::ir {

/// The `n` (1 to 8) bytes at `p` as a little-endian word, zero-padded (as memcpy into a zeroed
/// word puts them), formed in registers: bytes stored into a word in pieces and read back as one
/// word stall that load until the stores retire.
inline uint64_t bytes_word(const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  if (n >= 4) {  // two loads of 4 that overlap where n < 8
    uint32_t lo = 0, hi = 0;
    std::memcpy(&lo, b, 4);
    std::memcpy(&hi, b + n - 4, 4);
    return lo | uint64_t{hi} << (8 * (n - 4));
  }
  return uint64_t{b[0]} | uint64_t{b[n >> 1]} << (8 * (n >> 1)) |
         uint64_t{b[n - 1]} << (8 * (n - 1));
}

/// bytes_word of a string of up to 8 bytes, at compile time.
constexpr uint64_t literal_word(std::string_view s) {
  uint64_t w = 0;
  for (size_t i = 0; i < s.size(); ++i) w |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  return w;
}

}  // namespace amk::ir
