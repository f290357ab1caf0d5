#include "instructions/simd.h"

#include <cstdlib>
#include <string_view>

#include "instructions/dtype.h"
#include "instructions/simd_x86.h"

namespace amk::inst::simd {
namespace {

// ---- scalar -----------------------------------------------------------------------------------
float dot_f32_scalar(const float* x, const float* w, int64_t n) {
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    a0 += x[k] * w[k];
    a1 += x[k + 1] * w[k + 1];
    a2 += x[k + 2] * w[k + 2];
    a3 += x[k + 3] * w[k + 3];
  }
  for (; k < n; ++k) a0 += x[k] * w[k];
  return (a0 + a1) + (a2 + a3);
}
// Eight independent sums: the compiler turns each step into vector instructions of the baseline
// ISA (SSE2 on x86-64) without reassociating anything; one sum ran at memory's 7-11%.
float sum8(const float* a) {
  return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}
float dot_bf16_scalar(const float* x, const uint16_t* w, int64_t n) {
  float a[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) a[j] += x[k + j] * bf16_to_f32(w[k + j]);
  for (; k < n; ++k) a[0] += x[k] * bf16_to_f32(w[k]);
  return sum8(a);
}
float dot_f16_scalar(const float* x, const uint16_t* w, int64_t n) {
  float a = 0;
  for (int64_t k = 0; k < n; ++k) a += x[k] * f16_to_f32(w[k]);
  return a;
}
float dot_i8_scalar(const float* x, const int8_t* w, int64_t n) {
  float a[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) a[j] += x[k + j] * static_cast<float>(w[k + j]);
  for (; k < n; ++k) a[0] += x[k] * static_cast<float>(w[k]);
  return sum8(a);
}
float dot_u4_scalar(const float* xe, const float* xo, const uint8_t* w, int64_t nb) {
  float a[8] = {};
  int64_t j = 0;
  for (; j + 8 <= nb; j += 8)
    for (int i = 0; i < 8; ++i)
      a[i] += xe[j + i] * static_cast<float>(w[j + i] & 0xF) +
              xo[j + i] * static_cast<float>(w[j + i] >> 4);
  for (; j < nb; ++j)
    a[0] += xe[j] * static_cast<float>(w[j] & 0xF) + xo[j] * static_cast<float>(w[j] >> 4);
  return sum8(a);
}
float sum_scalar(const float* x, int64_t n) {
  float a = 0;
  for (int64_t k = 0; k < n; ++k) a += x[k];
  return a;
}

// ---- AVX2 + FMA + F16C --------------------------------------------------------------------------
AMK_AVX2 float dot_f32_avx2(const float* x, const float* w, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    prefetch(w + k);
    prefetch(w + k + 16);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), _mm256_loadu_ps(w + k + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 16), _mm256_loadu_ps(w + k + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 24), _mm256_loadu_ps(w + k + 24), a3);
  }
  for (; k + 8 <= n; k += 8)
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(w + k), a0);
  float r = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; k < n; ++k) r += x[k] * w[k];
  return r;
}
AMK_AVX2 __m256 bf16x8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
AMK_AVX2 float dot_bf16_avx2(const float* x, const uint16_t* w, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    if (k % 32 == 0) prefetch(w + k);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), bf16x8(w + k), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8), bf16x8(w + k + 8), a1);
  }
  float r = hsum256(_mm256_add_ps(a0, a1));
  for (; k < n; ++k) r += x[k] * bf16_to_f32(w[k]);
  return r;
}
AMK_AVX2 float dot_f16_avx2(const float* x, const uint16_t* w, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k),
                         _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k))),
                         a0);
    a1 = _mm256_fmadd_ps(
        _mm256_loadu_ps(x + k + 8),
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k + 8))), a1);
  }
  float r = hsum256(_mm256_add_ps(a0, a1));
  for (; k < n; ++k) r += x[k] * f16_to_f32(w[k]);
  return r;
}
AMK_AVX2 float dot_i8_avx2(const float* x, const int8_t* w, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + k));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b)), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + k + 8),
                         _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))), a1);
  }
  float r = hsum256(_mm256_add_ps(a0, a1));
  for (; k < n; ++k) r += x[k] * static_cast<float>(w[k]);
  return r;
}
AMK_AVX2 float dot_u4_avx2(const float* xe, const float* xo, const uint8_t* w, int64_t nb) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  const __m256i lo4 = _mm256_set1_epi32(0xF);
  int64_t j = 0;
  for (; j + 8 <= nb; j += 8) {
    __m256i b = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + j)));
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xe + j), _mm256_cvtepi32_ps(_mm256_and_si256(b, lo4)), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(xo + j), _mm256_cvtepi32_ps(_mm256_srli_epi32(b, 4)), a1);
  }
  float r = hsum256(_mm256_add_ps(a0, a1));
  for (; j < nb; ++j)
    r += xe[j] * static_cast<float>(w[j] & 0xF) + xo[j] * static_cast<float>(w[j] >> 4);
  return r;
}
AMK_AVX2 float sum_avx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + k));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + k + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + k + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + k + 24));
  }
  for (; k + 8 <= n; k += 8) a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + k));
  float r = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; k < n; ++k) r += x[k];
  return r;
}

// ---- AVX-512 ----------------------------------------------------------------------------------
AMK_AVX512 float dot_f32_avx512(const float* x, const float* w, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) {
    for (int c = 0; c < 4; ++c) prefetch(w + k + 16 * c);
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_loadu_ps(w + k), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), _mm512_loadu_ps(w + k + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 32), _mm512_loadu_ps(w + k + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 48), _mm512_loadu_ps(w + k + 48), a3);
  }
  for (; k + 16 <= n; k += 16)
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), _mm512_loadu_ps(w + k), a0);
  if (k < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + k), _mm512_maskz_loadu_ps(m, w + k), a1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
AMK_AVX512 __m512 bf16x16(const uint16_t* p) {
  __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
AMK_AVX512 float dot_bf16_avx512(const float* x, const uint16_t* w, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) {
    prefetch(w + k);
    prefetch(w + k + 32);
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), bf16x16(w + k), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), bf16x16(w + k + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 32), bf16x16(w + k + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 48), bf16x16(w + k + 48), a3);
  }
  for (; k + 16 <= n; k += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), bf16x16(w + k), a0);
  float r = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; k < n; ++k) r += x[k] * bf16_to_f32(w[k]);
  return r;
}
AMK_AVX512 float dot_f16_avx512(const float* x, const uint16_t* w, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0;
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    a0 = _mm512_fmadd_ps(
        _mm512_loadu_ps(x + k),
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k))), a0);
    a1 = _mm512_fmadd_ps(
        _mm512_loadu_ps(x + k + 16),
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k + 16))), a1);
  }
  float r = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
  for (; k < n; ++k) r += x[k] * f16_to_f32(w[k]);
  return r;
}
AMK_AVX512 float dot_i8_avx512(const float* x, const int8_t* w, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) {
    prefetch(w + k);
    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), i8x16(w + k), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 16), i8x16(w + k + 16), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 32), i8x16(w + k + 32), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k + 48), i8x16(w + k + 48), a3);
  }
  for (; k + 16 <= n; k += 16) a0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + k), i8x16(w + k), a0);
  float r = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; k < n; ++k) r += x[k] * static_cast<float>(w[k]);
  return r;
}
AMK_AVX512 float dot_u4_avx512(const float* xe, const float* xo, const uint8_t* w, int64_t nb) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const __m512i lo4 = _mm512_set1_epi32(0xF);
  int64_t j = 0;
  for (; j + 32 <= nb; j += 32) {
    prefetch(w + j);
    __m512i b0 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + j)));
    __m512i b1 =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + j + 16)));
    a0 =
        _mm512_fmadd_ps(_mm512_loadu_ps(xe + j), _mm512_cvtepi32_ps(_mm512_and_si512(b0, lo4)), a0);
    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xo + j), _mm512_cvtepi32_ps(_mm512_srli_epi32(b0, 4)), a1);
    a2 = _mm512_fmadd_ps(_mm512_loadu_ps(xe + j + 16),
                         _mm512_cvtepi32_ps(_mm512_and_si512(b1, lo4)), a2);
    a3 = _mm512_fmadd_ps(_mm512_loadu_ps(xo + j + 16), _mm512_cvtepi32_ps(_mm512_srli_epi32(b1, 4)),
                         a3);
  }
  float r = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; j < nb; ++j)
    r += xe[j] * static_cast<float>(w[j] & 0xF) + xo[j] * static_cast<float>(w[j] >> 4);
  return r;
}

AMK_AVX512 float sum_avx512(const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t k = 0;
  for (; k + 64 <= n; k += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + k));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + k + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + k + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + k + 48));
  }
  for (; k + 16 <= n; k += 16) a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + k));
  float r = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; k < n; ++k) r += x[k];
  return r;
}

// ---- half to fp32, in bulk --------------------------------------------------------------------
// The CPU's conversion is exact for every finite half; a chunk with an infinity or NaN goes
// through f16_to_f32 so that NaN payloads come out exactly as the scalar conversion gives them.
void f16_to_f32_scalar(const uint16_t* h, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(h[i]);
}
AMK_AVX512 void f16_to_f32_avx512(const uint16_t* h, int64_t n, float* out) {
  const __m256i exp = _mm256_set1_epi16(0x7C00);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + i));
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(v, exp), exp)))
      f16_to_f32_scalar(h + i, 16, out + i);
    else
      _mm512_storeu_ps(out + i, _mm512_cvtph_ps(v));
  }
  f16_to_f32_scalar(h + i, n - i, out + i);
}
AMK_AVX2 void f16_to_f32_avx2(const uint16_t* h, int64_t n, float* out) {
  const __m128i exp = _mm_set1_epi16(0x7C00);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(v, exp), exp)))
      f16_to_f32_scalar(h + i, 8, out + i);
    else
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(v));
  }
  f16_to_f32_scalar(h + i, n - i, out + i);
}

// Composed fallbacks (any ISA): per-group dots through the table below.
float dot_i8_scaled_generic(const float* x, const int8_t* w, int64_t ng, int64_t group,
                            const float* s);
float dot_u4_scaled_generic(const float* xe, const float* xo, const uint8_t* w, int64_t ng,
                            int64_t gb, const float* s);

AMK_AVX512 float dot_i8_scaled_avx512(const float* x, const int8_t* w, int64_t ng, int64_t group,
                                      const float* s) {
  if (group % 64 != 0) return dot_i8_scaled_generic(x, w, ng, group, s);
  __m512 t0 = _mm512_setzero_ps(), t1 = t0;
  for (int64_t g = 0; g < ng; ++g) {
    const float* xg = x + g * group;
    const int8_t* wg = w + g * group;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t k = 0; k < group; k += 64) {
      prefetch(wg + k);
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xg + k), i8x16(wg + k), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xg + k + 16), i8x16(wg + k + 16), a1);
      a2 = _mm512_fmadd_ps(_mm512_loadu_ps(xg + k + 32), i8x16(wg + k + 32), a2);
      a3 = _mm512_fmadd_ps(_mm512_loadu_ps(xg + k + 48), i8x16(wg + k + 48), a3);
    }
    const __m512 sg = _mm512_set1_ps(s[g]);
    t0 = _mm512_fmadd_ps(_mm512_add_ps(a0, a1), sg, t0);
    t1 = _mm512_fmadd_ps(_mm512_add_ps(a2, a3), sg, t1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(t0, t1));
}

AMK_AVX512 float dot_u4_scaled_avx512(const float* xe, const float* xo, const uint8_t* w,
                                      int64_t ng, int64_t gb, const float* s) {
  if (gb % 16 != 0) return dot_u4_scaled_generic(xe, xo, w, ng, gb, s);
  const __m512i lo4 = _mm512_set1_epi32(0xF);
  __m512 total = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    const int64_t base = g * gb;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    for (int64_t j = 0; j < gb; j += 16) {
      if (j % 64 == 0) prefetch(w + base + j);
      __m512i b =
          _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + base + j)));
      a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xe + base + j),
                           _mm512_cvtepi32_ps(_mm512_and_si512(b, lo4)), a0);
      a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xo + base + j),
                           _mm512_cvtepi32_ps(_mm512_srli_epi32(b, 4)), a1);
    }
    total = _mm512_fmadd_ps(_mm512_add_ps(a0, a1), _mm512_set1_ps(s[g]), total);
  }
  return _mm512_reduce_add_ps(total);
}

struct Table {
  const char* isa;
  float (*f32)(const float*, const float*, int64_t);
  float (*bf16)(const float*, const uint16_t*, int64_t);
  float (*f16)(const float*, const uint16_t*, int64_t);
  float (*i8)(const float*, const int8_t*, int64_t);
  float (*u4)(const float*, const float*, const uint8_t*, int64_t);
  float (*sum)(const float*, int64_t);
  float (*i8_scaled)(const float*, const int8_t*, int64_t, int64_t,
                     const float*) = dot_i8_scaled_generic;
  float (*u4_scaled)(const float*, const float*, const uint8_t*, int64_t, int64_t,
                     const float*) = dot_u4_scaled_generic;
  void (*f16_bulk)(const uint16_t*, int64_t, float*) = f16_to_f32_scalar;
};

Table avx2_table() {
  return {"avx2",      dot_f32_avx2, dot_bf16_avx2,         dot_f16_avx2,          dot_i8_avx2,
          dot_u4_avx2, sum_avx2,     dot_i8_scaled_generic, dot_u4_scaled_generic, f16_to_f32_avx2};
}

Table pick() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
    return {"avx512",         dot_f32_avx512,       dot_bf16_avx512,
            dot_f16_avx512,   dot_i8_avx512,        dot_u4_avx512,
            sum_avx512,       dot_i8_scaled_avx512, dot_u4_scaled_avx512,
            f16_to_f32_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return avx2_table();
  return {"scalar",      dot_f32_scalar, dot_bf16_scalar, dot_f16_scalar,
          dot_i8_scalar, dot_u4_scalar,  sum_scalar};
}

const Table kScalar{"scalar",      dot_f32_scalar, dot_bf16_scalar, dot_f16_scalar,
                    dot_i8_scalar, dot_u4_scalar,  sum_scalar};

// AMK_SIMD=scalar or avx2 (on an AVX-512 CPU) picks a slower path, to measure it.
Table initial() {
  const char* env = getenv("AMK_SIMD");
  const std::string_view want = env ? env : "";
  if (want == "scalar") return kScalar;
  Table best = pick();
  return want == "avx2" && std::string_view(best.isa) == "avx512" ? avx2_table() : best;
}

Table& table() {
  static Table t = initial();
  return t;
}

}  // namespace

const char* isa() {
  return table().isa;
}

bool use_isa(std::string_view name) {
  if (name == "scalar") {
    table() = kScalar;
    return true;
  }
  Table best = pick();
  if (name == "best" || name == best.isa) {
    table() = best;
    return true;
  }
  if (name == "avx2" && std::string_view(best.isa) == "avx512") {
    table() = avx2_table();
    return true;
  }
  return false;
}
float dot_f32(const float* x, const float* w, int64_t n) {
  return table().f32(x, w, n);
}
float dot_bf16(const float* x, const uint16_t* w, int64_t n) {
  return table().bf16(x, w, n);
}
float dot_f16(const float* x, const uint16_t* w, int64_t n) {
  return table().f16(x, w, n);
}
float dot_i8(const float* x, const int8_t* w, int64_t n) {
  return table().i8(x, w, n);
}
float dot_u4(const float* xe, const float* xo, const uint8_t* w, int64_t nbytes) {
  return table().u4(xe, xo, w, nbytes);
}
float sum(const float* x, int64_t n) {
  return table().sum(x, n);
}
float dot_i8_scaled(const float* x, const int8_t* w, int64_t n_groups, int64_t group,
                    const float* s) {
  return table().i8_scaled(x, w, n_groups, group, s);
}
void halves_to_f32(const uint16_t* h, int64_t n, float* out) {
  table().f16_bulk(h, n, out);
}
float dot_u4_scaled(const float* xe, const float* xo, const uint8_t* w, int64_t n_groups,
                    int64_t group_bytes, const float* s) {
  return table().u4_scaled(xe, xo, w, n_groups, group_bytes, s);
}

namespace {

float dot_i8_scaled_generic(const float* x, const int8_t* w, int64_t ng, int64_t group,
                            const float* s) {
  float a = 0;
  for (int64_t g = 0; g < ng; ++g) a += s[g] * table().i8(x + g * group, w + g * group, group);
  return a;
}
float dot_u4_scaled_generic(const float* xe, const float* xo, const uint8_t* w, int64_t ng,
                            int64_t gb, const float* s) {
  float a = 0;
  for (int64_t g = 0; g < ng; ++g) a += s[g] * table().u4(xe + g * gb, xo + g * gb, w + g * gb, gb);
  return a;
}

}  // namespace

}  // namespace amk::inst::simd
