// Internal: the vector kernels of simd.h, written once (simd_kernels.inc) and compiled for each
// instruction set amk dispatches to (simd_wide.cpp); simd.cpp and gemv.cpp pick a set's table.
#pragma once

#include <cstdint>

namespace amk::inst::simd {

/// One instruction set's vector kernels; each computes what simd.h says of its namesake.
struct WideKernels {
  int lanes;  ///< fp32 lanes of one vector (8 or 16)
  float (*dot_f32)(const float*, const float*, int64_t);
  float (*dot_bf16)(const float*, const uint16_t*, int64_t);
  float (*dot_f16)(const float*, const uint16_t*, int64_t);
  float (*dot_i8)(const float*, const int8_t*, int64_t);
  float (*dot_u4)(const float*, const float*, const uint8_t*, int64_t);
  float (*sum)(const float*, int64_t);
  /// dot_i8_scaled for a group that is a multiple of 4 x lanes.
  float (*i8_scaled)(const float*, const int8_t*, int64_t, int64_t, const float*);
  /// dot_u4_scaled for group bytes that are a multiple of lanes.
  float (*u4_scaled)(const float*, const float*, const uint8_t*, int64_t, int64_t, const float*);
  void (*halves_to_f32)(const uint16_t*, int64_t, float*);
  /// GEMV tiles: out[r] = the dot of x with row r (w + r ld, K long) for r < rows, each row's
  /// bits the same whatever rows are beside it. bf16: x permuted in blocks of 2 x lanes (even
  /// elements, then odd). int8 (group a multiple of 4 x lanes): row r's scales at s + r groups.
  void (*f32_tile)(const float* x, const float* w, int64_t ld, int64_t K, int64_t rows, float* out);
  void (*bf16_tile)(const float* xs, const uint16_t* w, int64_t ld, int64_t K, int64_t rows,
                    float* out);
  void (*i8_tile)(const float* x, const int8_t* w, int64_t ld, int64_t groups, int64_t group,
                  const float* s, int64_t rows, float* out);
};

/// Which software prefetch the row kernels use (simd_x86.h: PlanPrefetch, with the measurements),
/// picked once per CPU by simd.cpp: Near, every row 4 KiB ahead into L1 (measured on Intel and AMD
/// Zen 5); Split, the fp32 and bf16 rows none and the int8 and int4 rows 8 KiB ahead into L2 (AMD
/// family 19h, Zen 3 and 4, where a prefetch into L1 halves a bf16 row and any slows the fp32 and
/// bf16 rows).
enum class PrefetchPlan : uint8_t { Near, Split };
/// The plan in use.
PrefetchPlan prefetch_plan();

/// The kernels of the set in use (simd.cpp's dispatch): a vector set's, or the scalar ones (one
/// lane, no i8_scaled, u4_scaled or i8_tile; bf16_tile takes x as it is).
const WideKernels& kernels_in_use();
/// The AVX2 + FMA + F16C kernels, under the prefetch plan in use.
const WideKernels& avx2_kernels();
/// The AVX-512 (F, BW) kernels, under the prefetch plan in use.
const WideKernels& avx512_kernels();

}  // namespace amk::inst::simd
