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

#define AMK_AVX2 __attribute__((target("avx2,fma,f16c")))
#define AMK_AVX512 __attribute__((target("avx512f,avx512bw,f16c,fma")))

namespace amk::inst::simd {

// Weights stream once per decode step: prefetching a few KiB ahead of the loads keeps more misses
// in flight than the hardware prefetcher does alone (measured on an Intel Xeon, into L1 4 KiB
// ahead: bf16 GEMV 8.6 -> 11.2 GB/s). Here into L2 (prefetcht1) 8 KiB ahead: on Zen 4 a prefetch
// into L1 halves the rate of a bf16 GEMV from memory, and one 4 KiB ahead costs bf16 and int8 a
// sixth (one core, ratio to the streaming read, 3 runs each: into L1 4 KiB ahead bf16 0.39-0.44,
// int8 0.56; L2 4 KiB 0.69-0.74, 0.58-0.70; L2 8 KiB 0.82-0.84, 0.65-0.75; none 0.85-0.90,
// 0.72-0.76, but int4, bound by its unpacking, 0.34-0.36 against 0.38-0.41 with). Against the
// L1 prefetch in alternation (5 runs): bf16 0.45 -> 0.78, int8 0.41 -> 0.70, fp32 0.73 -> 0.72.
constexpr int kPrefetchBytes = 8192;
inline void prefetch(const void* p) {
  __builtin_prefetch(static_cast<const char*>(p) + kPrefetchBytes, 0, 2);
}

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
