// The vector kernels, compiled once per instruction set: each set's namespace defines the
// vocabulary simd_kernels.inc is written in (a vector of L floats F, of L ints I, of L halves H,
// and the loads, widenings and arithmetic on them) and then includes the kernels, all under the
// set's target so that the intrinsics inline.
#include "instructions/simd_wide.h"

#include <type_traits>

#include "instructions/dtype.h"
#include "instructions/simd_x86.h"

#define AMK_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define AMK_TARGET_BEGIN(t) \
  AMK_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
#define AMK_TARGET_END AMK_PRAGMA(clang attribute pop)
#else
#define AMK_TARGET_BEGIN(t) AMK_PRAGMA(GCC push_options) AMK_PRAGMA(GCC target(t))
#define AMK_TARGET_END AMK_PRAGMA(GCC pop_options)
#endif

AMK_TARGET_BEGIN("avx2,fma,f16c")
namespace amk::inst::simd::avx2 {
namespace {

using F = __m256;
using I = __m256i;
using H = __m128i;
constexpr int L = 8;
// Rows of a block (simd_kernels.inc: by_row_blocks) in 16 registers: an fp32 or bf16 row holds
// four sums. Int8 rows go one at a time: two at a time read K = 8192 at 0.40-0.47 of the stream
// against 0.62-0.65 alone (Zen 4, 4 alternating runs).
constexpr int kRowsF32 = 3, kRowsBf16 = 3, kRowsI8 = 1, kBf16Sums = 4;

inline F zero() {
  return _mm256_setzero_ps();
}
inline F set1(float v) {
  return _mm256_set1_ps(v);
}
inline F loadu(const float* p) {
  return _mm256_loadu_ps(p);
}
// The first min(rem, L) floats at p, zeros after them (nothing past them is read).
inline F load_part(const float* p, int64_t rem) {
  if (rem >= L) return loadu(p);
  const I lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(rem)), lanes));
}
inline F fma(F a, F b, F c) {
  return _mm256_fmadd_ps(a, b, c);
}
inline F add(F a, F b) {
  return _mm256_add_ps(a, b);
}
inline float reduce(F a) {
  return hsum256(a);
}
inline F widen_bf16(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline F widen_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline F widen_i8(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline I widen_u8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline F low_nibbles(I b) {
  return _mm256_cvtepi32_ps(_mm256_and_si256(b, _mm256_set1_epi32(0xF)));
}
inline F high_nibbles(I b) {
  return _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4));
}
inline I load_once(const void* p) {
  return load_once256(p);
}
inline F bf16_even(I d) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(d, 16));
}
inline F bf16_odd(I d) {
  return _mm256_castsi256_ps(_mm256_and_si256(d, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline H load_halves(const uint16_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
inline bool has_inf_or_nan(H v) {
  const H exp = _mm_set1_epi16(0x7C00);
  return _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, exp), exp)) != 0;
}
inline void store_halves(float* out, H v) {
  _mm256_storeu_ps(out, _mm256_cvtph_ps(v));
}

#include "instructions/simd_kernels.inc"

}  // namespace
}  // namespace amk::inst::simd::avx2
AMK_TARGET_END

AMK_TARGET_BEGIN("avx512f,avx512bw,f16c,fma")
namespace amk::inst::simd::avx512 {
namespace {

using F = __m512;
using I = __m512i;
using H = __m256i;
constexpr int L = 16;
// Rows of a block (simd_kernels.inc: by_row_blocks) in 32 registers: an fp32 row holds four sums,
// a bf16 row two, an int8 row six (six int8 rows spill: K = 8192 0.42 against 0.59 for four).
// Eight bf16 rows rather than twelve: a decode's 64-row tiles then leave none over (Llama-3.2-1B
// step, one worker, 3 alternating runs: 0.85-0.88 against 0.83-0.89).
constexpr int kRowsF32 = 6, kRowsBf16 = 8, kRowsI8 = 4, kBf16Sums = 2;

inline F zero() {
  return _mm512_setzero_ps();
}
inline F set1(float v) {
  return _mm512_set1_ps(v);
}
inline F loadu(const float* p) {
  return _mm512_loadu_ps(p);
}
// The first min(rem, L) floats at p, zeros after them (nothing past them is read).
inline F load_part(const float* p, int64_t rem) {
  return _mm512_maskz_loadu_ps(static_cast<__mmask16>(rem >= L ? 0xFFFFu : (1u << rem) - 1), p);
}
inline F fma(F a, F b, F c) {
  return _mm512_fmadd_ps(a, b, c);
}
inline F add(F a, F b) {
  return _mm512_add_ps(a, b);
}
inline float reduce(F a) {
  return _mm512_reduce_add_ps(a);
}
inline F widen_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
inline F widen_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// Sign-extended straight from memory (no extract on the shuffle port).
inline F widen_i8(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline I widen_u8(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline F low_nibbles(I b) {
  return _mm512_cvtepi32_ps(_mm512_and_si512(b, _mm512_set1_epi32(0xF)));
}
inline F high_nibbles(I b) {
  return _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4));
}
inline I load_once(const void* p) {
  return load_once512(p);
}
inline F bf16_even(I d) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(d, 16));
}
inline F bf16_odd(I d) {
  return _mm512_castsi512_ps(_mm512_and_si512(d, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
inline H load_halves(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline bool has_inf_or_nan(H v) {
  const H exp = _mm256_set1_epi16(0x7C00);
  return _mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(v, exp), exp)) != 0;
}
inline void store_halves(float* out, H v) {
  _mm512_storeu_ps(out, _mm512_cvtph_ps(v));
}

#include "instructions/simd_kernels.inc"

}  // namespace
}  // namespace amk::inst::simd::avx512
AMK_TARGET_END

namespace amk::inst::simd {

const WideKernels& avx2_kernels() {
  return avx2::kKernels[static_cast<size_t>(prefetch_plan())];
}
const WideKernels& avx512_kernels() {
  return avx512::kKernels[static_cast<size_t>(prefetch_plan())];
}

}  // namespace amk::inst::simd
