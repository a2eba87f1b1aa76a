// BlockQ4_0: GGUF layout and nibble order, ggml's reference rounding on hand-computed blocks, odd blocks (all
// zeros, a huge value, the sign of the max), and the proven quantize -> dequantize error bound.
#include "quant/block_q4_0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kQ4Values = BlockQ4_0::kNumValues;

BlockQ4_0 quantize_q4_block(const std::vector<float>& x) {
  BlockQ4_0 block{};
  quantize_row_q4_0(x.data(), &block, kQ4Values);
  return block;
}

std::vector<float> dequantize_q4_block(const BlockQ4_0& block) {
  std::vector<float> y(kQ4Values);
  dequantize_row_q4_0(&block, y.data(), kQ4Values);
  return y;
}

TEST(BlockQ4_0Test, LayoutIsGgufs) {
  EXPECT_EQ(sizeof(BlockQ4_0), 18u);
  EXPECT_EQ(sizeof(BlockQ4_0[3]), 3u * 18u);
  // Element j < 16 is the low nibble of qs[j], element j >= 16 the high nibble of qs[j - 16].
  uint8_t bytes[18] = {0x00, 0x40};  // d = 2
  for (int j = 0; j < 16; ++j) bytes[2 + j] = uint8_t(j | ((15 - j) << 4));
  BlockQ4_0 block;
  std::memcpy(&block, bytes, sizeof(block));
  const std::vector<float> y = dequantize_q4_block(block);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[size_t(j)], float((j - 8) * 2)) << "at " << j;
    EXPECT_EQ(y[size_t(j + 16)], float((15 - j - 8) * 2)) << "at " << j + 16;
  }
}

TEST(BlockQ4_0Test, HandComputedBlock) {
  // max = -8 (the first of the two largest magnitudes) gives d = -8 / -8 = 1, and q = min(15, trunc(x + 8.5)):
  // round half up, and everything from 7.5 on clipped to 7.
  std::vector<float> x(kQ4Values, 0.0f);
  const float in[] = {-8.0f, 7.0f, 7.4f, 7.6f, 0.5f, -0.5f, 3.49f, 8.0f};
  for (size_t j = 0; j < std::size(in); ++j) x[j] = in[j];
  x[16] = 1.0f;
  x[17] = -7.5f;
  const BlockQ4_0 block = quantize_q4_block(x);
  EXPECT_EQ(block.d, 0x3c00);
  const uint8_t expected[16] = {0x90, 0x1f, 0x8f, 0x8f, 0x89, 0x88, 0x8b, 0x8f,
                                0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], expected[j]) << "at " << j;
  const std::vector<float> y = dequantize_q4_block(block);
  const float values[] = {-8, 7, 7, 7, 1, 0, 3, 7};
  for (size_t j = 0; j < std::size(values); ++j) EXPECT_EQ(y[j], values[j]) << "at " << j;
  EXPECT_EQ(y[16], 1.0f);
  EXPECT_EQ(y[17], -7.0f);
}

TEST(BlockQ4_0Test, AllZeroBlockIsNegativeZeroScaleAndNibbleEight) {
  // ggml computes d = 0.0f / -8 = -0.0f and stores its fp16 bits; byte compatibility means we do too.
  const BlockQ4_0 block = quantize_q4_block(std::vector<float>(kQ4Values, 0.0f));
  EXPECT_EQ(block.d, 0x8000);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0x88);
  for (float v : dequantize_q4_block(block)) EXPECT_EQ(v, 0.0f);
}

TEST(BlockQ4_0Test, ScaleSignFollowsTheMax) {
  std::vector<float> x(kQ4Values, 0.0f);
  // Positive max: d = 4 / -8 = -0.5; the max maps to nibble 0, its negation is clipped to 7 * -0.5 = -3.5.
  x[0] = 4.0f;
  x[1] = -4.0f;
  BlockQ4_0 block = quantize_q4_block(x);
  EXPECT_EQ(block.d, 0xb800);  // fp16 -0.5
  std::vector<float> y = dequantize_q4_block(block);
  EXPECT_EQ(y[0], 4.0f);
  EXPECT_EQ(y[1], -3.5f);
  // Negative max (it comes first, so it wins the tie on magnitude): d = 0.5.
  x[0] = -4.0f;
  x[1] = 4.0f;
  block = quantize_q4_block(x);
  EXPECT_EQ(block.d, 0x3800);
  y = dequantize_q4_block(block);
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[1], 3.5f);
}

TEST(BlockQ4_0Test, OneHugeValueFlushesTheRestToZero) {
  std::vector<float> x(kQ4Values);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  for (float& v : x) v = small(rng);
  x[20] = 60000.0f;  // d = -7500
  const BlockQ4_0 block = quantize_q4_block(x);
  EXPECT_EQ(block.d, float_to_fp16(-7500.0f));
  const std::vector<float> y = dequantize_q4_block(block);
  for (int j = 0; j < kQ4Values; ++j) EXPECT_EQ(y[size_t(j)], j == 20 ? 60000.0f : 0.0f) << "at " << j;
}

TEST(BlockQ4_0Test, BlocksOfARowAreIndependent) {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> x(size_t(3 * kQ4Values));
  for (float& v : x) v = dist(rng);
  x[70] = -50.0f;
  BlockQ4_0 row[3];
  quantize_row_q4_0(x.data(), row, 3 * kQ4Values);
  for (int b = 0; b < 3; ++b) {
    BlockQ4_0 single;
    quantize_row_q4_0(x.data() + b * kQ4Values, &single, kQ4Values);
    EXPECT_EQ(std::memcmp(&single, &row[b], sizeof(single)), 0) << "block " << b;
  }
}

// The bound: with d = max / -8 (f32), v = x * (1/d) lies in [-8, 8] (up to two f32 roundings, < 1e-5 at
// |v| <= 8). The nibble is floor(v + 8.5) capped at 15, so q - 8 = round-half-up(v), within 0.5 of v, except
// for v in [7.5, 8] (values of the sign opposite to the max, with |x| >= 15/16 |max|), which are clipped to 7,
// at most 1 away. Storing d16 = fp16(d) adds |q - 8| * |d16 - d| <= 8 |d16 - d|. So for every element
//   |err| <= |d| (1 + 1e-5) + 8 |d16 - d|,
// and |err| <= |d| (0.5 + 1e-5) + 8 |d16 - d| for every element with v < 7.5, including the max itself (v = -8,
// reproduced exactly when d16 == d).
TEST(BlockQ4_0Test, RoundTripErrorIsWithinTheBound) {
  std::mt19937 rng(17);
  int64_t num_clipped = 0;
  for (float scale : {1e-2f, 0.3f, 1.0f, 50.0f, 2e3f}) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    const int64_t n = 64 * kQ4Values;
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    std::vector<BlockQ4_0> blocks(size_t(n / kQ4Values));
    quantize_row_q4_0(x.data(), blocks.data(), n);
    dequantize_row_q4_0(blocks.data(), y.data(), n);
    for (int64_t b = 0; b < n / kQ4Values; ++b) {
      float amax = 0.0f, max = 0.0f;
      for (int64_t j = 0; j < kQ4Values; ++j) {
        const float v = x[size_t(b * kQ4Values + j)];
        if (amax < std::fabs(v)) amax = std::fabs(v), max = v;
      }
      const double d = std::fabs(max / -8.0f);
      const double d16 = std::fabs(fp16_to_float(blocks[size_t(b)].d));
      const double fp16_err = 8.0 * std::fabs(d16 - d);
      for (int64_t j = 0; j < kQ4Values; ++j) {
        const size_t k = size_t(b * kQ4Values + j);
        const double err = std::fabs(double(y[k]) - double(x[k]));
        const bool clipped = -8.0 * double(x[k]) / double(max) >= 7.5;
        num_clipped += clipped;
        ASSERT_LE(err, d * (clipped ? 1.0 + 1e-5 : 0.5 + 1e-5) + fp16_err) << "scale " << scale << " at " << k;
      }
    }
  }
  EXPECT_GT(num_clipped, 0);  // the wide case was exercised
}

// Bytes written by ggml's quantize_row_q4_0_ref (llama.cpp's ggml-quants.c, built with gcc -O2 on x86-64)
// for three blocks of an exact integer pattern; the third block's max is negative. Byte compatibility with GGUF
// files written by llama-quantize rests on this.
TEST(BlockQ4_0Test, MatchesGgmlReferenceBytes) {
  std::vector<float> x(96);
  for (uint32_t i = 0; i < 96; ++i) x[i] = float(int((i * 7919u + 13u) % 2001u) - 1000) / 64.0f;
  x[70] = -20.0f;
  const uint8_t expected[3 * 18] = {
      0xb6, 0x3f, 0x50, 0x5f, 0x4f, 0x3e, 0x2d, 0x2d, 0x1c, 0x0b, 0xfb, 0xfa, 0xf9, 0xe9, 0xd8, 0xc7, 0xc7, 0xb6,
      0xa8, 0x3f, 0xfa, 0xfa, 0xe9, 0xe8, 0xd8, 0xc7, 0xb6, 0xb6, 0xa5, 0x94, 0x93, 0x83, 0x72, 0x71, 0x61, 0x50,
      0x00, 0x41, 0x95, 0x95, 0x84, 0x84, 0x73, 0x73, 0x60, 0x6e, 0x5e, 0x5d, 0x4d, 0x4c, 0x3b, 0x2b, 0x2a, 0xea,
  };
  BlockQ4_0 blocks[3];
  quantize_row_q4_0(x.data(), blocks, 96);
  uint8_t actual[sizeof(blocks)];
  std::memcpy(actual, blocks, sizeof(blocks));
  for (size_t k = 0; k < sizeof(actual); ++k) EXPECT_EQ(int(actual[k]), int(expected[k])) << "byte " << k;
}

TEST(BlockQ4_0DeathTest, RowsMustBeWholeBlocks) {
  std::vector<float> x(48);
  BlockQ4_0 blocks[2];
  EXPECT_DEATH(quantize_row_q4_0(x.data(), blocks, 48), "whole blocks of 32");
}

}  // namespace
}  // namespace pagoda::quant
