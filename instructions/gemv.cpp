// GEMV tiles, row after row (rows too long for x to stay in L1 several at a time, sharing each load
// of x: simd_kernels.inc, by_row_blocks). The bf16 and int4 kernels read x in the order their
// weights unpack in (one load of weights feeds two or eight vectors of products, with no widening
// shuffles), so a tile streams its weights at memory bandwidth. Products and sums stay fp32 (AMK's
// numerics); only the order of the additions differs from a plain dot. The fp32, bf16 and int8 rows
// are the width-generic kernels (simd_kernels.inc); int4 has one algorithm per instruction set
// here.
#include <cstring>
#include <string_view>

#include "instructions/dtype.h"
#include "instructions/simd.h"
#include "instructions/simd_wide.h"
#include "instructions/simd_x86.h"

namespace amk::inst::simd {
namespace {

enum class Isa { Scalar, Avx2, Avx512 };
Isa current() {
  const std::string_view i = isa();
  return i == "avx512" ? Isa::Avx512 : i == "avx2" ? Isa::Avx2 : Isa::Scalar;
}

// The vector kernels of the set in use (AVX-512 or AVX2).
const WideKernels& wide(Isa i) {
  return i == Isa::Avx512 ? avx512_kernels() : avx2_kernels();
}

// x in the order a block of `block` weights unpacks in: lane i of phase n holds x[8i + n] for
// eight phases (int4: nibble n of dword i), x[2i + n] for two (bf16: half n of dword i). The
// elements after the last whole block keep their places.
void permute_blocks(const float* x, int64_t K, int64_t block, int phases, float* xs) {
  const int64_t lanes = block / phases;
  int64_t b = 0;
  for (; b + block <= K; b += block)
    for (int n = 0; n < phases; ++n)
      for (int64_t i = 0; i < lanes; ++i) xs[b + n * lanes + i] = x[b + phases * i + n];
  for (; b < K; ++b) xs[b] = x[b];
}

// ---- int4, AVX-512 -----------------------------------------------------------------------------
AMK_AVX512 inline __m512 sum4(const __m512* a) {
  return _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
}

// Σ_k x[k] ((q[k] - 8 - z[g]) s[g]) for R adjacent rows, each weight dequantised as AMK does by
// a 16-entry table per group and row; xs: x permuted in blocks of 128 (eight nibble phases), each
// load of it serving the R rows; group % 128 == 0.
template <class Pf, int R>
AMK_AVX512 void u4_rows512(const float* xs, const uint8_t* w, int64_t ld, int64_t ng, int64_t group,
                           const float* s, const float* z, float* out) {
  const __m512 values =
      _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);  // nibble - 8
  __m512 a[R][4];
  for (int r = 0; r < R; ++r)
    for (__m512& v : a[r]) v = _mm512_setzero_ps();
  const int64_t blocks = group / 128;
  for (int64_t g = 0; g < ng; ++g) {
    __m512 tab[R];
    for (int r = 0; r < R; ++r)
      tab[r] = _mm512_mul_ps(z ? _mm512_sub_ps(values, _mm512_set1_ps(z[r * ng + g])) : values,
                             _mm512_set1_ps(s[r * ng + g]));
    for (int64_t b = 0; b < blocks; ++b, w += 64, xs += 128) {
      __m512i d[R];
      for (int r = 0; r < R; ++r) {
        prefetch<Pf>(w + r * ld);
        d[r] = load_once512(w + r * ld);
      }
      // vpermps reads the low four bits of each index: nibble n after a shift by 4n.
      for (int n = 0; n < 8; ++n) {
        const __m512 xv = _mm512_loadu_ps(xs + 16 * n);
        for (int r = 0; r < R; ++r)
          a[r][n % 4] = _mm512_fmadd_ps(
              xv, _mm512_permutexvar_ps(n ? _mm512_srli_epi32(d[r], 4 * n) : d[r], tab[r]),
              a[r][n % 4]);
      }
    }
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_reduce_add_ps(sum4(a[r]));
}

// ---- int4, AVX2 --------------------------------------------------------------------------------
// Σ_g s[g] (Σ_{k in g} x[k] nibble[k] - (8 + z[g]) gsum[g]); xs: x permuted in blocks of 64
// (eight nibble phases of eight lanes); group % 64 == 0.
template <class Pf>
AMK_AVX2 float u4_row256(const float* xs, const float* gsum, const uint8_t* w, int64_t ng,
                         int64_t group, const float* s, const float* z) {
  const __m256i m4 = _mm256_set1_epi32(0xF);
  __m256 t0 = _mm256_setzero_ps(), t1 = t0;
  for (int64_t g = 0; g < ng; ++g) {
    __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
    for (int64_t k = g * group; k < (g + 1) * group; k += 64) {
      if (k % 128 == 0) prefetch<Pf>(w + k / 2);
      const __m256i d = load_once256(w + k / 2);
#define AMK_U4_PHASE(n)                                                                     \
  a[(n)&3] = _mm256_fmadd_ps(                                                               \
      _mm256_loadu_ps(xs + k + 8 * (n)),                                                    \
      _mm256_cvtepi32_ps((n) == 7   ? _mm256_srli_epi32(d, 28)                              \
                         : (n) == 0 ? _mm256_and_si256(d, m4)                               \
                                    : _mm256_and_si256(_mm256_srli_epi32(d, 4 * (n)), m4)), \
      a[(n)&3]);
      AMK_U4_PHASE(0)
      AMK_U4_PHASE(1)
      AMK_U4_PHASE(2)
      AMK_U4_PHASE(3)
      AMK_U4_PHASE(4)
      AMK_U4_PHASE(5)
      AMK_U4_PHASE(6)
      AMK_U4_PHASE(7)
#undef AMK_U4_PHASE
    }
    const __m256 sg = _mm256_set1_ps(s[g]);
    t0 = _mm256_fmadd_ps(_mm256_add_ps(a[0], a[1]), sg, t0);
    t1 = _mm256_fmadd_ps(_mm256_add_ps(a[2], a[3]), sg, t1);
  }
  float acc = hsum256(_mm256_add_ps(t0, t1));
  for (int64_t g = 0; g < ng; ++g) acc -= s[g] * (8.0f + (z ? z[g] : 0.0f)) * gsum[g];
  return acc;
}

}  // namespace

int64_t gemv_scratch(int64_t K, int64_t n_groups) {
  return K + n_groups + 16;  // + room to align
}

namespace {

// The scratch's first 64-byte boundary: vector loads of x that straddle two cache lines cost
// a quarter of the quantised kernels' speed.
float* aligned(float* scratch) {
  const auto a = (reinterpret_cast<uintptr_t>(scratch) + 63) & ~uintptr_t{63};
  return reinterpret_cast<float*>(a);
}

// x itself when it is aligned, else its copy in the scratch.
const float* aligned_x(const float* x, int64_t K, float* scratch) {
  if (reinterpret_cast<uintptr_t>(x) % 64 == 0) return x;
  float* xa = aligned(scratch);
  std::memcpy(xa, x, static_cast<size_t>(K) * sizeof(float));
  return xa;
}

}  // namespace

void gemv_f32(const float* x, const float* w, int64_t ld, int64_t K, int64_t rows, float* out,
              float* scratch) {
  const float* xa = aligned_x(x, K, scratch);
  kernels_in_use().f32_tile(xa, w, ld, K, rows, out);
}

void gemv_bf16(const float* x, const uint16_t* w, int64_t ld, int64_t K, int64_t rows, float* out,
               float* scratch) {
  const WideKernels& k = kernels_in_use();
  float* xs = aligned(scratch);
  permute_blocks(x, K, 2 * k.lanes, 2, xs);
  k.bf16_tile(xs, w, ld, K, rows, out);
}

bool gemv_i8_scaled(const float* x, const int8_t* w, int64_t ld, int64_t n_groups, int64_t group,
                    const float* s, int64_t rows, float* out, float* scratch) {
  const Isa i = current();
  if (i == Isa::Scalar) return false;
  // AVX2's kernel takes groups of 32, where AVX-512's needs 64.
  const WideKernels& k = group % (4 * wide(i).lanes) == 0 ? wide(i) : avx2_kernels();
  if (group % (4 * k.lanes) != 0) return false;
  const float* xa = aligned_x(x, n_groups * group, scratch);
  k.i8_tile(xa, w, ld, n_groups, group, s, rows, out);
  return true;
}

bool gemv_u4(const float* x, const uint8_t* w, int64_t ld, int64_t n_groups, int64_t group,
             const float* s, const float* z, int64_t rows, float* out, float* scratch) {
  const Isa i = current();
  const int64_t K = n_groups * group;
  const bool wide = i == Isa::Avx512 && group % 128 == 0;
  if (!wide && (i == Isa::Scalar || group % 64 != 0)) return false;
  float* xs = aligned(scratch);
  permute_blocks(x, K, wide ? 128 : 64, 8, xs);
  // The rows with the prefetch the plan gives int4 rows (simd_wide.h: PrefetchPlan).
  auto all_rows = [&](auto pf) {
    using Pf = decltype(pf);
    if (wide) {
      // Row after row: two rows in flight would share their loads of x but read memory slower.
      for (int64_t r = 0; r < rows; ++r)
        u4_rows512<Pf, 1>(xs, w + r * ld, ld, n_groups, group, s + r * n_groups,
                          z ? z + r * n_groups : nullptr, out + r);
      return;
    }
    float* gsum = xs + K;
    for (int64_t g = 0; g < n_groups; ++g) gsum[g] = sum(x + g * group, group);
    for (int64_t r = 0; r < rows; ++r) {
      const float* zr = z ? z + r * n_groups : nullptr;
      out[r] = u4_row256<Pf>(xs, gsum, w + r * ld, n_groups, group, s + r * n_groups, zr);
    }
  };
  if (prefetch_plan() == PrefetchPlan::Near)
    all_rows(PlanPrefetch<PrefetchPlan::Near>::Quant{});
  else
    all_rows(PlanPrefetch<PrefetchPlan::Split>::Quant{});
  return true;
}

}  // namespace amk::inst::simd
