// IQ4_NL, IQ4_XS and MXFP4 dequantization against values computed from each format's definition: the IQ4 codebook,
// IQ4_XS's 6-bit sub-block scales split over scales_l/scales_h (all 64 values, negative and subnormal d), and
// MXFP4's E2M1 values times 2^(e - 127) computed with ldexp over every exponent byte, subnormal results included.
#include "quant/block_iq4_mxfp4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "ggml_block_test_util.h"

namespace pagoda::quant {
namespace {

using testing::expect_same_bits;
using testing::f32_bits;
using testing::pack_nibbles;

TEST(BlockIq4Mxfp4Test, Layouts) {
  EXPECT_EQ(sizeof(BlockIQ4_NL), 18u);
  EXPECT_EQ(sizeof(BlockIQ4_XS), 136u);
  EXPECT_EQ(sizeof(BlockMXFP4), 17u);
}

TEST(BlockIq4Mxfp4Test, Iq4Nl) {
  std::mt19937 rng(4);
  for (uint16_t d : testing::kFp16Scales) {
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = j < 16 ? j : int(rng() % 16);  // every codebook entry
    BlockIQ4_NL b{};
    b.d = d;
    pack_nibbles(q, b.qs);
    std::vector<float> y(32);
    dequantize_row_iq4_nl(&b, y.data(), 32);
    for (int j = 0; j < 32; ++j)
      ASSERT_EQ(f32_bits(y[size_t(j)]), f32_bits(fp16_to_float(d) * float(kIq4NlLevels[q[j]]))) << j;
  }
  EXPECT_EQ(kIq4NlLevels[0], -127);
  EXPECT_EQ(kIq4NlLevels[15], 113);
}

TEST(BlockIq4Mxfp4Test, Iq4Xs) {
  std::mt19937 rng(23);
  for (uint16_t d : testing::kFp16Scales) {
    for (int round = 0; round < 8; ++round) {  // eight rounds of eight sub-blocks: all 64 scales
      BlockIQ4_XS b{};
      b.d = d;
      int ls[8], q[256];
      for (int s = 0; s < 8; ++s) {
        ls[s] = 8 * round + s;
        b.scales_l[s / 2] |= uint8_t((ls[s] & 15) << (4 * (s % 2)));
        b.scales_h |= uint16_t((ls[s] >> 4) << (2 * s));
        for (int j = 0; j < 32; ++j) q[32 * s + j] = int(rng() % 16);
        pack_nibbles(q + 32 * s, b.qs + 16 * s);
      }
      std::vector<float> y(256);
      dequantize_row_iq4_xs(&b, y.data(), 256);
      for (int i = 0; i < 256; ++i) {
        const float dl = fp16_to_float(d) * float(ls[i / 32] - 32);
        ASSERT_EQ(f32_bits(y[size_t(i)]), f32_bits(dl * float(kIq4NlLevels[q[i]]))) << i;
      }
    }
  }
}

// FP4 E2M1: sign bit 3, exponent bits 2-1 (bias 1), mantissa bit 0; exponent 0 is subnormal (0 or 0.5).
double e2m1(int nibble) {
  const int e = (nibble >> 1) & 3, m = nibble & 1;
  const double magnitude = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
  return nibble & 8 ? -magnitude : magnitude;
}

TEST(BlockIq4Mxfp4Test, Mxfp4EveryExponent) {
  for (int e = 0; e < 256; ++e) {
    BlockMXFP4 b{};
    b.e = uint8_t(e);
    int q[32];
    for (int j = 0; j < 32; ++j) q[j] = (j * 7) % 16;
    pack_nibbles(q, b.qs);
    std::vector<float> y(32);
    dequantize_row_mxfp4(&b, y.data(), 32);
    for (int j = 0; j < 32; ++j) {
      // Exact in double; the f32 result is that value when representable, else ggml's rounding of 2x * 2^(e-128).
      // ggml's codebook holds -0 (nibble 8) as the integer 0, so it dequantizes to +0.
      const double want = q[j] == 8 ? 0.0 : std::ldexp(e2m1(q[j]), e - 127);
      const float want_f = float(want);
      if (e == 255 && std::isinf(want_f)) {
        // 6 * 2^128 overflows f32: ggml's product gives inf of the value's sign as well.
        ASSERT_TRUE(std::isinf(y[size_t(j)])) << e << " " << j;
        ASSERT_EQ(std::signbit(y[size_t(j)]), std::signbit(want_f));
        continue;
      }
      ASSERT_EQ(f32_bits(y[size_t(j)]), f32_bits(want_f)) << "e " << e << " nibble " << q[j];
    }
  }
}

}  // namespace
}  // namespace pagoda::quant
