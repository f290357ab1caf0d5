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
/// Σ x[k] (for the zero-point and int4 offset terms).
float sum(const float* x, int64_t n);
/// Σ_g s[g] * Σ_{k in group g} x[k] * w[k] over int8 weights (n_groups whole groups).
float dot_i8_scaled(const float* x, const int8_t* w, int64_t n_groups, int64_t group,
                    const float* s);
/// Σ_g s[g] * Σ_{j in group g} (xe[j] lo(w[j]) + xo[j] hi(w[j])) over packed nibbles (raw 0..15);
/// `group_bytes` = group / 2.
float dot_u4_scaled(const float* xe, const float* xo, const uint8_t* w, int64_t n_groups,
                    int64_t group_bytes, const float* s);

}  // namespace amk::inst::simd
