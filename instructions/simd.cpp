#include "instructions/simd.h"

#include <cpuid.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "instructions/dtype.h"
#include "instructions/simd_wide.h"

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

// ---- half to fp32, in bulk --------------------------------------------------------------------
void f16_to_f32_scalar(const uint16_t* h, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(h[i]);
}

// A GEMV tile of the scalar dot `dot`, row after row.
template <class W, float (*dot)(const float*, const W*, int64_t)>
void tile_scalar(const float* x, const W* w, int64_t ld, int64_t K, int64_t rows, float* out) {
  for (int64_t r = 0; r < rows; ++r) out[r] = dot(x, w + r * ld, K);
}

// The portable path: the scalar kernels above, in the shape of a vector set's table (with one
// lane, x permuted in blocks of two is x itself, so dot_bf16 makes the bf16 tile).
const WideKernels kScalarKernels{1,
                                 dot_f32_scalar,
                                 dot_bf16_scalar,
                                 dot_f16_scalar,
                                 dot_i8_scalar,
                                 dot_u4_scalar,
                                 sum_scalar,
                                 nullptr,
                                 nullptr,
                                 f16_to_f32_scalar,
                                 tile_scalar<float, dot_f32_scalar>,
                                 tile_scalar<uint16_t, dot_bf16_scalar>,
                                 nullptr};

// The kernels in use: a vector set's, or the scalar ones.
struct Table {
  const char* isa;
  const WideKernels* k;
};

// F16C (CPUID leaf 1, ECX): asked of cpuid itself, as clang's __builtin_cpu_supports knows no
// "f16c" before clang 16.
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

// The set named `isa` ("avx512", "avx2" or "scalar") under the prefetch plan in use.
Table of(std::string_view isa) {
  if (isa == "avx512") return {"avx512", &avx512_kernels()};
  if (isa == "avx2") return {"avx2", &avx2_kernels()};
  return {"scalar", &kScalarKernels};
}

// The best set this CPU has.
const char* best_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()) return "avx2";
  return "scalar";
}

// AMK_SIMD=scalar or avx2 (on an AVX-512 CPU) picks a slower path, to measure it.
Table initial() {
  const char* env = getenv("AMK_SIMD");
  const std::string_view want = env ? env : "";
  const std::string_view best = best_isa();
  if (want == "scalar" || (want == "avx2" && best == "avx512")) return of(want);
  return of(best);
}

Table& table() {
  static Table t = initial();
  return t;
}

// The plan of simd_wide.h for this CPU: Split on AMD family 19h (Zen 3, Zen 4), Near elsewhere.
PrefetchPlan best_plan() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return PrefetchPlan::Near;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return PrefetchPlan::Near;
  const unsigned base = (a >> 8) & 0xF, family = base == 0xF ? base + ((a >> 20) & 0xFF) : base;
  return family == 0x19 ? PrefetchPlan::Split : PrefetchPlan::Near;
}

std::optional<PrefetchPlan> plan_named(std::string_view name) {
  if (name == "near") return PrefetchPlan::Near;
  if (name == "split") return PrefetchPlan::Split;
  if (name == "best") return best_plan();
  return std::nullopt;
}

// AMK_PREFETCH=near or split picks that plan, to measure it on a CPU it is not this one's.
PrefetchPlan& plan() {
  static PrefetchPlan p = [] {
    const char* env = getenv("AMK_PREFETCH");
    return plan_named(env ? env : "best").value_or(best_plan());
  }();
  return p;
}

}  // namespace

PrefetchPlan prefetch_plan() {
  return plan();
}

const WideKernels& kernels_in_use() {
  return *table().k;
}

const char* isa() {
  return table().isa;
}

bool use_isa(std::string_view name) {
  const std::string_view best = best_isa();
  if (name == "best") name = best;
  if (name == "scalar" || name == best || (name == "avx2" && best == "avx512")) {
    table() = of(name);
    return true;
  }
  return false;
}

const char* prefetch() {
  return plan() == PrefetchPlan::Near ? "near" : "split";
}

bool use_prefetch(std::string_view name) {
  const std::optional<PrefetchPlan> p = plan_named(name);
  if (!p) return false;
  plan() = *p;
  table() = of(table().isa);
  return true;
}
float dot_f32(const float* x, const float* w, int64_t n) {
  return table().k->dot_f32(x, w, n);
}
float dot_bf16(const float* x, const uint16_t* w, int64_t n) {
  return table().k->dot_bf16(x, w, n);
}
float dot_f16(const float* x, const uint16_t* w, int64_t n) {
  return table().k->dot_f16(x, w, n);
}
float dot_i8(const float* x, const int8_t* w, int64_t n) {
  return table().k->dot_i8(x, w, n);
}
float dot_u4(const float* xe, const float* xo, const uint8_t* w, int64_t nbytes) {
  return table().k->dot_u4(xe, xo, w, nbytes);
}
float sum(const float* x, int64_t n) {
  return table().k->sum(x, n);
}
float dot_i8_scaled(const float* x, const int8_t* w, int64_t n_groups, int64_t group,
                    const float* s) {
  const WideKernels& k = *table().k;
  if (k.i8_scaled && group % (4 * k.lanes) == 0) return k.i8_scaled(x, w, n_groups, group, s);
  float a = 0;
  for (int64_t g = 0; g < n_groups; ++g) a += s[g] * k.dot_i8(x + g * group, w + g * group, group);
  return a;
}
void halves_to_f32(const uint16_t* h, int64_t n, float* out) {
  table().k->halves_to_f32(h, n, out);
}
float dot_u4_scaled(const float* xe, const float* xo, const uint8_t* w, int64_t n_groups,
                    int64_t group_bytes, const float* s) {
  const WideKernels& k = *table().k;
  if (k.u4_scaled && group_bytes % k.lanes == 0)
    return k.u4_scaled(xe, xo, w, n_groups, group_bytes, s);
  float a = 0;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int64_t at = g * group_bytes;
    a += s[g] * k.dot_u4(xe + at, xo + at, w + at, group_bytes);
  }
  return a;
}

}  // namespace amk::inst::simd
