// Sizes in checked 64-bit arithmetic: a product of dims or a sum of bytes either fits in int64 or
// says that it does not, never wrapping to a negative figure.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace amk::ir {

/// a + b, or nullopt when the sum does not fit in int64.
constexpr std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a * b, or nullopt when the product does not fit in int64.
constexpr std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a + b held at the int64 bound it passes (a figure that can only be too big, not wrap).
constexpr int64_t saturating_add(int64_t a, int64_t b) {
  if (const std::optional<int64_t> r = checked_add(a, b)) return *r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
/// a * b held at the int64 bound it passes.
constexpr int64_t saturating_mul(int64_t a, int64_t b) {
  if (const std::optional<int64_t> r = checked_mul(a, b)) return *r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                            : std::numeric_limits<int64_t>::max();
}

}  // namespace amk::ir
