#include "instructions/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "instructions/simd.h"

namespace amk::inst {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Rounds a finite |f| (given as its bit pattern without sign) into a small float format with
// `eb` exponent bits, `mb` mantissa bits and `bias`, round to nearest even. Returns the magnitude
// code; codes past the largest exponent field are returned as-is (the caller maps overflow).
uint32_t round_small(uint32_t a, int eb, int mb, int bias) {
  int exp = static_cast<int>(a >> 23) - 127 + bias;  // target exponent field of a normal result
  uint32_t mant = a & 0x7FFFFF;
  if ((a >> 23) == 0) return 0;  // fp32 subnormals are far below every small format's range
  mant |= 0x800000;              // implicit bit, 24 significant bits
  int shift = 23 - mb;           // bits to drop for a normal result
  if (exp <= 0) {                // subnormal in the target: shift further
    shift += 1 - exp;
    exp = 0;
    if (shift > 31) return 0;
  }
  uint32_t kept = mant >> shift;
  uint32_t rem = mant & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (kept & 1))) ++kept;  // may carry into the exponent
  if (exp == 0) return kept;  // subnormal (a carry makes it the smallest normal: still right)
  // kept holds the implicit bit at position mb; a carry moves it to mb+1.
  if (kept >> (mb + 1)) {
    kept >>= 1;
    ++exp;
  }
  (void)eb;
  return (static_cast<uint32_t>(exp) << mb) | (kept & ((1u << mb) - 1));
}

}  // namespace

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0x1F) return from_bits(sign | 0x7F800000 | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return from_bits(sign);
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while (!(mant & 0x400));
    return from_bits(sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FF) << 13));
  }
  return from_bits(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t u = bits(f);
  auto sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  uint32_t a = u & 0x7FFFFFFF;
  if (a >= 0x7F800000) {  // inf or NaN (payload kept, never turned into inf)
    if (a == 0x7F800000) return sign | 0x7C00;
    uint32_t m = (a & 0x7FFFFF) >> 13;
    return static_cast<uint16_t>(sign | 0x7C00 | (m ? m : 0x200));
  }
  uint32_t code = round_small(a, 5, 10, 15);
  if (code >= 0x7C00) return sign | 0x7C00;
  return static_cast<uint16_t>(sign | code);
}

uint16_t f32_to_bf16(float f) {
  uint32_t u = bits(f);
  if ((u & 0x7FFFFFFF) > 0x7F800000) {  // NaN: keep the payload's upper bits
    auto h = static_cast<uint16_t>(u >> 16);
    return (h & 0x7F) ? h : static_cast<uint16_t>(h | 0x40);
  }
  u += 0x7FFF + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

float f8e4m3_to_f32(uint8_t v) {
  uint32_t sign = static_cast<uint32_t>(v & 0x80) << 24;
  uint32_t exp = (v >> 3) & 0xF, mant = v & 0x7;
  if (exp == 0xF && mant == 0x7) return from_bits(sign | 0x7FC00000);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -9);
  return from_bits(sign | ((exp - 7 + 127) << 23) | (mant << 20));
}

uint8_t f32_to_f8e4m3(float f) {
  uint32_t u = bits(f);
  auto sign = static_cast<uint8_t>((u >> 24) & 0x80);
  uint32_t a = u & 0x7FFFFFFF;
  if (a >= 0x7F800000) return sign | 0x7F;  // inf and NaN -> NaN (the format has no inf)
  uint32_t code = round_small(a, 4, 3, 7);
  if (code > 0x7F) return sign | 0x7F;  // rounds past the largest code: NaN
  return static_cast<uint8_t>(sign | code);
}

float f8e5m2_to_f32(uint8_t v) {
  return f16_to_f32(static_cast<uint16_t>(v) << 8);  // E5M2 is binary16 with 2 mantissa bits
}

uint8_t f32_to_f8e5m2(float f) {
  uint32_t u = bits(f);
  auto sign = static_cast<uint8_t>((u >> 24) & 0x80);
  uint32_t a = u & 0x7FFFFFFF;
  if (a >= 0x7F800000) {
    if (a == 0x7F800000) return sign | 0x7C;
    uint32_t m = (a & 0x7FFFFF) >> 21;
    return static_cast<uint8_t>(sign | 0x7C | (m ? m : 0x2));
  }
  uint32_t code = round_small(a, 5, 2, 15);
  if (code >= 0x7C) return sign | 0x7C;
  return static_cast<uint8_t>(sign | code);
}

namespace {

template <typename I>
I to_int(float v) {
  if (std::isnan(v)) return 0;
  const auto lo = static_cast<double>(std::numeric_limits<I>::min());
  const auto hi = static_cast<double>(std::numeric_limits<I>::max());
  double t = std::trunc(static_cast<double>(v));
  return static_cast<I>(t < lo ? lo : t > hi ? hi : t);
}

}  // namespace

float load(const void* base, ir::DType d, int64_t i) {
  using ir::DType;
  const auto* p = static_cast<const uint8_t*>(base);
  switch (d) {
    case DType::F32: {
      float v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case DType::F16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return f16_to_f32(h);
    }
    case DType::BF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_f32(h);
    }
    case DType::F8E4M3:
      return f8e4m3_to_f32(p[i]);
    case DType::F8E5M2:
      return f8e5m2_to_f32(p[i]);
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return static_cast<float>(v);
    }
    case DType::I8:
      return static_cast<float>(static_cast<int8_t>(p[i]));
    case DType::I4: {
      uint8_t byte = p[i / 2];
      int nib = (i & 1) ? byte >> 4 : byte & 0xF;
      return static_cast<float>(nib >= 8 ? nib - 16 : nib);
    }
    case DType::U8:
      return static_cast<float>(p[i]);
    case DType::BOOL:
      return p[i] ? 1.0f : 0.0f;
  }
  return 0.0f;
}

void store(void* base, ir::DType d, int64_t i, float v) {
  using ir::DType;
  auto* p = static_cast<uint8_t*>(base);
  switch (d) {
    case DType::F32:
      std::memcpy(p + 4 * i, &v, 4);
      return;
    case DType::F16: {
      uint16_t h = f32_to_f16(v);
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case DType::BF16: {
      uint16_t h = f32_to_bf16(v);
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case DType::F8E4M3:
      p[i] = f32_to_f8e4m3(v);
      return;
    case DType::F8E5M2:
      p[i] = f32_to_f8e5m2(v);
      return;
    case DType::I32: {
      int32_t x = to_int<int32_t>(v);
      std::memcpy(p + 4 * i, &x, 4);
      return;
    }
    case DType::I8:
      p[i] = static_cast<uint8_t>(to_int<int8_t>(v));
      return;
    case DType::I4: {
      int x = std::isnan(v) ? 0 : static_cast<int>(std::clamp(std::trunc(v), -8.0f, 7.0f));
      uint8_t nib = static_cast<uint8_t>(x & 0xF);
      uint8_t& byte = p[i / 2];
      byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (nib << 4))
                     : static_cast<uint8_t>((byte & 0xF0) | nib);
      return;
    }
    case DType::U8:
      p[i] = to_int<uint8_t>(v);
      return;
    case DType::BOOL:
      p[i] = v != 0.0f ? 1 : 0;  // NaN is truthy, as torch's bool cast
      return;
  }
}

void to_f32(const void* base, ir::DType d, int64_t first, int64_t n, float* out) {
  if (d == ir::DType::F32) {
    std::memcpy(out, static_cast<const float*>(base) + first, static_cast<size_t>(n) * 4);
    return;
  }
  if (d == ir::DType::BF16) {
    const auto* p = static_cast<const uint16_t*>(base) + first;
    for (int64_t k = 0; k < n; ++k) out[k] = bf16_to_f32(p[k]);
    return;
  }
  if (d == ir::DType::F16) {
    simd::halves_to_f32(static_cast<const uint16_t*>(base) + first, n, out);
    return;
  }
  for (int64_t k = 0; k < n; ++k) out[k] = load(base, d, first + k);
}

void from_f32(const float* in, int64_t n, void* base, ir::DType d, int64_t first) {
  if (d == ir::DType::F32) {
    std::memcpy(static_cast<float*>(base) + first, in, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t k = 0; k < n; ++k) store(base, d, first + k, in[k]);
}

}  // namespace amk::inst
