// Proves the storage conversions: every F16, BF16 and FP8 bit pattern decodes and re-encodes to
// itself, and fp32 -> small formats rounds to the nearest representable value, ties to even, with
// the overflow rules of IEEE (F16, E5M2: inf) and OCP E4M3FN (NaN past 448), checked against a
// brute-force nearest-value search and, for F16, the CPU's own conversion.
#include <gtest/gtest.h>

#include <immintrin.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "instructions/dtype.h"
#include "instructions/simd.h"

namespace amk::inst {
namespace {

TEST(Conversions, EveryHalfAndBfloatPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    auto h = static_cast<uint16_t>(b);
    ASSERT_EQ(f32_to_f16(f16_to_f32(h)), h) << std::hex << b;
    ASSERT_EQ(f32_to_bf16(bf16_to_f32(h)), h) << std::hex << b;
  }
}

// The bulk conversion (to_f32 of F16 tensors) gives every pattern's bits exactly as the scalar
// one, NaN payloads included, on every SIMD path, from any starting offset.
TEST(Conversions, BulkHalfConversionEqualsTheScalarOneBitForBitOnEverySimdPath) {
  std::vector<uint16_t> all(65536 + 7);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i * 40503u);
  for (uint32_t b = 0; b < 65536; ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<float> out(all.size());
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (!simd::use_isa(isa)) continue;
    for (size_t first : {size_t{0}, size_t{3}}) {
      simd::halves_to_f32(all.data() + first, static_cast<int64_t>(all.size() - first), out.data());
      for (size_t i = first; i < all.size(); ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(out[i - first]),
                  std::bit_cast<uint32_t>(f16_to_f32(all[i])))
            << isa << " 0x" << std::hex << all[i];
    }
  }
  simd::use_isa("best");
}

TEST(Conversions, EveryFp8PatternRoundTripsAndDecodesPerOcp) {
  for (uint32_t b = 0; b < 256; ++b) {
    auto v = static_cast<uint8_t>(b);
    float e4 = f8e4m3_to_f32(v);
    if ((b & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(e4));
    } else {
      EXPECT_EQ(f32_to_f8e4m3(e4), v) << b;
    }
    float e5 = f8e5m2_to_f32(v);
    EXPECT_EQ(f32_to_f8e5m2(e5), v) << b;
  }
  EXPECT_EQ(f8e4m3_to_f32(0x7E), 448.0f);  // largest E4M3FN
  EXPECT_EQ(f8e4m3_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(f8e5m2_to_f32(0x7B), 57344.0f);
  EXPECT_TRUE(std::isinf(f8e5m2_to_f32(0x7C)));
  EXPECT_EQ(f32_to_f8e4m3(464.0f), 0x7E) << "the tie between 448 and the NaN code goes to even";
  EXPECT_EQ(f32_to_f8e4m3(470.0f) & 0x7F, 0x7F) << "past the tie: NaN (no infinity in E4M3FN)";
  EXPECT_EQ(f32_to_f8e4m3(1e30f) & 0x7F, 0x7F);
  EXPECT_EQ(f32_to_f8e5m2(1e30f), 0x7C);
}

// The nearest of `codes` (sorted by value, finite) to x, ties to the even code.
template <typename Decode>
uint32_t nearest(float x, uint32_t n_codes, Decode decode) {
  double best = INFINITY;
  uint32_t pick = 0;
  for (uint32_t c = 0; c < n_codes; ++c) {
    float v = decode(c);
    if (!std::isfinite(v)) continue;
    double d = std::fabs(static_cast<double>(v) - x);
    if (d < best ||
        (d == best && (c & 1) == 0 && (pick & 1) == 1 && std::signbit(v) == std::signbit(x))) {
      best = d;
      pick = c;
    }
  }
  return pick;
}

TEST(Conversions, Fp32ToFp8RoundsToNearestEvenLikeABruteForceSearch) {
  std::mt19937_64 g(7);
  for (int i = 0; i < 20000; ++i) {
    float x = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(g),
                         static_cast<int>(g() % 24) - 14);
    if (std::fabs(x) < 400) {
      uint32_t want =
          nearest(x, 256, [](uint32_t c) { return f8e4m3_to_f32(static_cast<uint8_t>(c)); });
      EXPECT_EQ(f8e4m3_to_f32(f32_to_f8e4m3(x)), f8e4m3_to_f32(static_cast<uint8_t>(want))) << x;
    }
    uint32_t want5 =
        nearest(x, 256, [](uint32_t c) { return f8e5m2_to_f32(static_cast<uint8_t>(c)); });
    EXPECT_EQ(f8e5m2_to_f32(f32_to_f8e5m2(x)), f8e5m2_to_f32(static_cast<uint8_t>(want5))) << x;
  }
}

__attribute__((target("f16c"))) uint16_t hw_f16(float x) {
  return static_cast<uint16_t>(
      _mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(x), _MM_FROUND_TO_NEAREST_INT)));
}

TEST(Conversions, Fp32ToHalfEqualsTheCpusConversionAndBfloatRoundsToNearestEven) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C on this CPU";
  std::mt19937_64 g(8);
  for (int i = 0; i < 2000000; ++i) {
    float x = std::bit_cast<float>(static_cast<uint32_t>(g()));
    if (std::isnan(x)) continue;
    ASSERT_EQ(f32_to_f16(x), hw_f16(x)) << x;
    // bf16: the two neighbours bracket x; the result must be the nearer, ties to even.
    uint32_t u = std::bit_cast<uint32_t>(x);
    uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
    uint16_t got = f32_to_bf16(x);
    // Past the largest finite value the next step is 2^128 (IEEE: overflow rounds to infinity).
    auto value = [](uint16_t c) {
      float f = bf16_to_f32(c);
      return std::isinf(f) ? std::copysign(std::ldexp(1.0, 128), f) : static_cast<double>(f);
    };
    if (std::isinf(x)) continue;
    double dl = std::fabs(value(lo) - x), dh = std::fabs(value(hi) - x);
    uint16_t want = dl < dh ? lo : dh < dl ? hi : (lo & 1 ? hi : lo);
    ASSERT_EQ(got, want) << x;
  }
}

TEST(Conversions, IntegerStoresTruncateSaturateAndPackNibbles) {
  uint8_t buf[8] = {};
  store(buf, ir::DType::I8, 0, 300.7f);
  EXPECT_EQ(static_cast<int8_t>(buf[0]), 127);
  store(buf, ir::DType::I8, 1, -2.9f);
  EXPECT_EQ(static_cast<int8_t>(buf[1]), -2);
  store(buf, ir::DType::U8, 2, NAN);
  EXPECT_EQ(buf[2], 0);
  uint8_t packed[2] = {};
  store(packed, ir::DType::I4, 0, -3.0f);
  store(packed, ir::DType::I4, 1, 7.0f);
  store(packed, ir::DType::I4, 2, -8.0f);
  EXPECT_EQ(packed[0], 0x7D);  // low nibble = element 0 (-3 -> 0xD), high = element 1 (7)
  EXPECT_EQ(load(packed, ir::DType::I4, 0), -3.0f);
  EXPECT_EQ(load(packed, ir::DType::I4, 1), 7.0f);
  EXPECT_EQ(load(packed, ir::DType::I4, 2), -8.0f);
}

}  // namespace
}  // namespace amk::inst
