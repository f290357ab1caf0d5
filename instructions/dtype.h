// Storage types: exact conversions to and from fp32 (round to nearest even) for every DType.
#pragma once

#include <cstdint>

#include "ir/types.h"

namespace amk::inst {

/// IEEE binary16 -> fp32 (exact; NaN payloads kept).
float f16_to_f32(uint16_t h);
/// fp32 -> IEEE binary16, round to nearest even; overflow to inf, NaN stays NaN.
uint16_t f32_to_f16(float f);
/// bfloat16 -> fp32 (exact).
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
/// fp32 -> bfloat16, round to nearest even; NaN stays NaN.
uint16_t f32_to_bf16(float f);
/// OCP FP8 E4M3FN -> fp32 (no infinities; S.1111.111 is NaN; max 448).
float f8e4m3_to_f32(uint8_t v);
/// fp32 -> E4M3FN, round to nearest even; values that round past 448 become NaN (as torch does).
uint8_t f32_to_f8e4m3(float f);
/// OCP FP8 E5M2 -> fp32 (IEEE-like: infinities and NaNs).
float f8e5m2_to_f32(uint8_t v);
/// fp32 -> E5M2, round to nearest even; overflow to inf.
uint8_t f32_to_f8e5m2(float f);

/// Element `i` of a buffer of dtype `d` as fp32 (I4: signed nibble, low nibble first).
float load(const void* base, ir::DType d, int64_t i);
/// Stores fp32 `v` as element `i` (ints: truncate toward zero, saturate, NaN -> 0; BOOL: v != 0).
void store(void* base, ir::DType d, int64_t i, float v);
/// Converts `n` contiguous elements starting at element `first` into fp32.
void to_f32(const void* base, ir::DType d, int64_t first, int64_t n, float* out);
/// Stores `n` fp32 values into contiguous elements starting at element `first`.
void from_f32(const float* in, int64_t n, void* base, ir::DType d, int64_t first);

}  // namespace amk::inst
