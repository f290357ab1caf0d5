// Internal: x86 helpers shared by the SIMD kernels (simd_wide.cpp, gemv.cpp).
#pragma once

// GCC 12 warns about the placeholder operands inside its own AVX-512 intrinsics when they are
// inlined here (GCC bug 105593); the warnings are about the header, not this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "instructions/simd_wide.h"

#define AMK_AVX2 __attribute__((target("avx2,fma,f16c")))
#define AMK_AVX512 __attribute__((target("avx512f,avx512bw,f16c,fma")))

namespace amk::inst::simd {

// Weights stream once per decode step; how far ahead of its loads a row kernel asks for them, and
// into which cache, is one of these (template arguments of the kernels, so the loops hold no test
// of it), picked per CPU (simd_wide.h: PrefetchPlan). Measured, one core, a GEMV's ratio to a
// stream of the same bytes:
//  - an Intel Xeon, into L1 4 KiB ahead against none: bf16 8.6 -> 11.2 GB/s.
//  - AMD Zen 4 (family 25 model 17), AVX-512, 4 alternating runs: none: fp32 0.94-0.97, bf16
//    0.92-0.95, int8 0.34-0.37, int4 0.21-0.25; into L2 8 KiB ahead: 0.83-0.87, 0.74-0.79,
//    0.71-0.74, 0.38-0.42; into L1 4 KiB ahead: 0.84-0.89, 0.44-0.49, 0.43-0.54, 0.33-0.39.
/// No software prefetch: the hardware's streams alone.
struct NoPrefetch {
  static constexpr int kBytes = 0, kLocality = 0;
};
/// 4 KiB ahead into L1 (prefetcht0).
struct NearL1 {
  static constexpr int kBytes = 4096, kLocality = 3;
};
/// 8 KiB ahead into L2 (prefetcht1).
struct FarL2 {
  static constexpr int kBytes = 8192, kLocality = 2;
};
template <class Pf>
inline void prefetch(const void* p) {
  if constexpr (Pf::kBytes > 0)
    __builtin_prefetch(static_cast<const char*>(p) + Pf::kBytes, 0, Pf::kLocality);
}
/// What each PrefetchPlan gives the rows: Full for the fp32 and bf16 ones, Quant for int8 and
/// int4 (the one place that says so; the kernel tables and the int4 tiles read it).
template <PrefetchPlan P>
struct PlanPrefetch;
template <>
struct PlanPrefetch<PrefetchPlan::Near> {
  using Full = NearL1;
  using Quant = NearL1;
};
template <>
struct PlanPrefetch<PrefetchPlan::Split> {
  using Full = NoPrefetch;
  using Quant = FarL2;
};

AMK_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// 64 / 32 bytes of weights loaded into a register once: unpacked several ways (bf16 halves, int4
// nibbles), the compiler would otherwise fold the load into each use and read every line twice
// or eight times (measured: bf16 GEMV from memory 0.68 -> 0.9 of the streaming read).
AMK_AVX512 inline __m512i load_once512(const void* p) {
  __m512i d = _mm512_loadu_si512(p);
  asm("" : "+v"(d));
  return d;
}
AMK_AVX2 inline __m256i load_once256(const void* p) {
  __m256i d = _mm256_loadu_si256(static_cast<const __m256i*>(p));
  asm("" : "+x"(d));
  return d;
}

}  // namespace amk::inst::simd
