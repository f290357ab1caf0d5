// Vectorised inner loops, dispatched once at start-up (AVX-512, AVX2+FMA+F16C, or scalar).
#pragma once

#include <cstdint>
#include <string_view>

namespace amk::inst::simd {

/// Which implementation the dispatcher picked ("avx512", "avx2" or "scalar").
const char* isa();
/// Switches implementation ("scalar", "avx2", "avx512", "best"); false when this CPU lacks it.
/// Not thread-safe: for tests and benchmarks that compare the paths.
bool use_isa(std::string_view name);
/// Which software prefetch the vector paths' GEMV rows use: "near" or "split" (picked per CPU,
/// or by AMK_PREFETCH; instructions/simd_wide.h says what each does and where it is measured).
const char* prefetch();
/// Switches it ("near", "split", "best": this CPU's); false for another name. It changes no
/// result, only speed. Not thread-safe: for tests and benchmarks that compare the plans.
bool use_prefetch(std::string_view name);
/// Σ x[k] * w[k] over fp32 weights.
float dot_f32(const float* x, const float* w, int64_t n);
/// Σ x[k] * w[k] over bfloat16 weights.
float dot_bf16(const float* x, const uint16_t* w, int64_t n);
/// Σ x[k] * w[k] over IEEE half weights.
float dot_f16(const float* x, const uint16_t* w, int64_t n);
/// Σ x[k] * w[k] over int8 weights (raw values).
float dot_i8(const float* x, const int8_t* w, int64_t n);
/// Σ xe[j] * lo(w[j]) + xo[j] * hi(w[j]) over packed nibbles (raw values 0..15).
float dot_u4(const float* xe, const float* xo, const uint8_t* w, int64_t nbytes);
/// out[i] = the half h[i] as fp32, for i < n (exactly as inst::f16_to_f32).
void halves_to_f32(const uint16_t* h, int64_t n, float* out);
/// Σ x[k] (for the zero-point and int4 offset terms).
float sum(const float* x, int64_t n);
/// Σ_g s[g] * Σ_{k in group g} x[k] * w[k] over int8 weights (n_groups whole groups).
float dot_i8_scaled(const float* x, const int8_t* w, int64_t n_groups, int64_t group,
                    const float* s);
/// Σ_g s[g] * Σ_{j in group g} (xe[j] lo(w[j]) + xo[j] hi(w[j])) over packed nibbles (raw 0..15);
/// `group_bytes` = group / 2.
float dot_u4_scaled(const float* xe, const float* xo, const uint8_t* w, int64_t n_groups,
                    int64_t group_bytes, const float* s);

// GEMV tiles, `rows` weight rows of stride `ld` elements (bytes for int4) against one x of K
// elements (gemv.cpp). `scratch` holds gemv_scratch(K, n_groups) floats.
/// Floats of scratch the GEMV tiles below need.
int64_t gemv_scratch(int64_t K, int64_t n_groups = 0);
/// out[r] = Σ_k x[k] * w[r * ld + k] over fp32 weights.
void gemv_f32(const float* x, const float* w, int64_t ld, int64_t K, int64_t rows, float* out,
              float* scratch);
/// out[r] = Σ_k x[k] * w[r * ld + k] over bfloat16 weights.
void gemv_bf16(const float* x, const uint16_t* w, int64_t ld, int64_t K, int64_t rows, float* out,
               float* scratch);
/// out[r] = Σ_g s[r * n_groups + g] * Σ_{k in group g} x[k] * w[r * ld + k] over int8 weights
/// (K = n_groups * group); false (nothing written) for a group size it has no kernel for.
bool gemv_i8_scaled(const float* x, const int8_t* w, int64_t ld, int64_t n_groups, int64_t group,
                    const float* s, int64_t rows, float* out, float* scratch);
/// out[r] = Σ_k x[k] * (nibble_k - 8 - z[r, g]) * s[r, g] over packed int4 rows (low nibble =
/// even k; K = n_groups * group; z may be null); false (nothing written) for a group size or ISA
/// it has no kernel for.
bool gemv_u4(const float* x, const uint8_t* w, int64_t ld, int64_t n_groups, int64_t group,
             const float* s, const float* z, int64_t rows, float* out, float* scratch);

}  // namespace amk::inst::simd
