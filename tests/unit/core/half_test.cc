// Tests for the scalar fp16/bf16 conversions (src/core/half.h): exhaustive round trips over every 16-bit
// pattern, every rounding midpoint between adjacent representable values, and known tie-to-even cases.
#include "core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace pagoda {
namespace {

bool fp16_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// The value of a half bit pattern computed independently with ldexp.
double fp16_reference(uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  if (exp == 31) return mant == 0 ? sign * std::numeric_limits<double>::infinity() : std::nan("");
  return sign * std::ldexp(1024 + mant, exp - 25);
}

TEST(HalfTest, Fp16ToFloatMatchesReferenceForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = uint16_t(bits);
    const float f = fp16_to_float(h);
    if (fp16_is_nan(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << bits;
      EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << bits;
      continue;
    }
    EXPECT_EQ(double(f), fp16_reference(h)) << std::hex << bits;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << bits;  // -0.0 keeps its sign
  }
}

TEST(HalfTest, Fp16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t h = uint16_t(bits);
    const uint16_t back = float_to_fp16(fp16_to_float(h));
    if (fp16_is_nan(h)) {
      // The payload is not promised; a NaN stays a NaN of the same sign.
      EXPECT_TRUE(fp16_is_nan(back)) << std::hex << bits;
      EXPECT_EQ(back & 0x8000, h & 0x8000) << std::hex << bits;
    } else {
      EXPECT_EQ(back, h) << std::hex << bits;
    }
  }
}

TEST(HalfTest, Bf16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const uint16_t b = uint16_t(bits);
    const float f = bf16_to_float(b);
    const uint16_t back = float_to_bf16(f);
    if (bf16_is_nan(b)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << bits;
      EXPECT_TRUE(bf16_is_nan(back)) << std::hex << bits;
      EXPECT_EQ(back & 0x8000, b & 0x8000) << std::hex << bits;
    } else {
      EXPECT_EQ(float_to_bits(f), uint32_t(b) << 16) << std::hex << bits;
      EXPECT_EQ(back, b) << std::hex << bits;
    }
  }
}

// Between every two adjacent finite halves (and between the largest and 65536, where inf begins), the exact
// midpoint goes to the even one and one float ulp either side goes to the nearer one.
TEST(HalfTest, Fp16RoundsEveryMidpointToNearestEven) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t lo = 0; lo < 0x7c00; ++lo) {
      const uint16_t lo_h = uint16_t(sign | lo);
      const uint16_t hi_h = uint16_t(sign | (lo + 1));  // lo == 0x7bff: hi is inf, as rounding wants
      const float lo_f = fp16_to_float(lo_h);
      const float hi_f = lo == 0x7bff ? (sign ? -65536.0f : 65536.0f) : fp16_to_float(hi_h);
      const float mid = (lo_f + hi_f) / 2;  // exact: 12 significant bits fit a float
      const uint16_t even = (lo & 1) ? hi_h : lo_h;
      EXPECT_EQ(float_to_fp16(mid), even) << std::hex << lo_h;
      EXPECT_EQ(float_to_fp16(std::nextafter(mid, lo_f)), lo_h) << std::hex << lo_h;
      EXPECT_EQ(float_to_fp16(std::nextafter(mid, hi_f)), hi_h) << std::hex << lo_h;
    }
  }
}

TEST(HalfTest, Bf16RoundsEveryMidpointToNearestEven) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t lo = 0; lo < 0x7f80; ++lo) {
      const uint16_t lo_b = uint16_t(sign | lo);
      const uint16_t hi_b = uint16_t(sign | (lo + 1));
      // Midpoint and its neighbours built from bits: bf16 is the top half of a float.
      const uint32_t mid_bits = (uint32_t(lo_b) << 16) | 0x8000;
      const uint16_t even = (lo & 1) ? hi_b : lo_b;
      EXPECT_EQ(float_to_bf16(bits_to_float(mid_bits)), even) << std::hex << lo_b;
      EXPECT_EQ(float_to_bf16(bits_to_float(mid_bits - 1)), lo_b) << std::hex << lo_b;
      EXPECT_EQ(float_to_bf16(bits_to_float(mid_bits + 1)), hi_b) << std::hex << lo_b;
    }
  }
}

TEST(HalfTest, Fp16KnownValues) {
  EXPECT_EQ(float_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(float_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_fp16(1.0f + 0x1p-11f), 0x3c00);      // tie: down to even 1.0
  EXPECT_EQ(float_to_fp16(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie: up to even 1 + 2^-9
  EXPECT_EQ(float_to_fp16(2049.0f), 0x6800);              // tie between 2048 and 2050 -> 2048
  EXPECT_EQ(float_to_fp16(2051.0f), 0x6802);              // tie between 2050 and 2052 -> 2052
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);             // below the midpoint to 65536
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);             // the midpoint rounds to even: inf
  EXPECT_EQ(float_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(float_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);            // smallest subnormal
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);            // tie between 0 and 2^-24 -> 0
  EXPECT_EQ(float_to_fp16(3 * 0x1p-25f), 0x0002);        // tie between 1 and 2 ulps -> 2
  EXPECT_EQ(float_to_fp16(1023.5f * 0x1p-24f), 0x0400);  // tie rounds up into the smallest normal
  EXPECT_EQ(float_to_fp16(0x1p-14f), 0x0400);
  EXPECT_EQ(float_to_fp16(1e-30f), 0x0000);
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(bits_to_float(0x7f800001u))));  // payload only in dropped bits
  EXPECT_TRUE(fp16_is_nan(float_to_fp16(bits_to_float(0xff800001u))));
}

TEST(HalfTest, Bf16KnownValues) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);                     // tie: down to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);                 // tie: up to even
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // past the largest bf16: inf
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(bits_to_float(0x7f800001u))));
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(bits_to_float(0xffffffffu))));
}

#ifdef __FLT16_MAX__
// The compiler's own _Float16 conversion (IEEE round-to-nearest-even) as a second oracle on random floats.
TEST(HalfTest, Fp16MatchesCompilerOnRandomFloats) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = uint32_t(rng());
    // Half the samples near fp16's range (float exponents 100..145), where all the interesting cases are.
    if (i % 2 == 0) bits = (bits & 0x807fffffu) | ((100u + (bits >> 23) % 46u) << 23);
    const float f = bits_to_float(bits);
    if (std::isnan(f)) continue;
    const _Float16 expected = _Float16(f);
    uint16_t expected_bits;
    std::memcpy(&expected_bits, &expected, 2);
    ASSERT_EQ(float_to_fp16(f), expected_bits) << std::hexfloat << f;
  }
}
#endif

}  // namespace
}  // namespace pagoda
