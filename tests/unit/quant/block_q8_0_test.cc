// BlockQ8_0: GGUF layout, ggml's reference rounding on hand-computed blocks, odd blocks, and the proven
// quantize -> dequantize error bound.
#include "quant/block_q8_0.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"

namespace pagoda::quant {
namespace {

constexpr int64_t kQk = BlockQ8_0::kNumValues;

BlockQ8_0 quantize_block(const std::vector<float>& x) {
  BlockQ8_0 block{};
  quantize_row_q8_0(x.data(), &block, kQk);
  return block;
}

TEST(BlockQ8_0Test, LayoutIsGgufs) {
  EXPECT_EQ(sizeof(BlockQ8_0), 34u);
  EXPECT_EQ(sizeof(BlockQ8_0[3]), 3u * 34u);  // no padding between blocks of a row
  // Little-endian fp16 scale first, then the 32 int8 values.
  uint8_t bytes[34] = {0x00, 0x3c};
  for (int j = 0; j < 32; ++j) bytes[2 + j] = uint8_t(j - 16);
  BlockQ8_0 block;
  std::memcpy(&block, bytes, sizeof(block));
  EXPECT_EQ(block.d, 0x3c00);
  std::vector<float> y(kQk);
  dequantize_row_q8_0(&block, y.data(), kQk);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[size_t(j)], float(j - 16));
}

TEST(BlockQ8_0Test, HandComputedBlockRoundsHalfAwayFromZero) {
  // amax 127 gives d = 1 exactly, so q = roundf(x): ties go away from zero (roundf), not to even.
  std::vector<float> x(kQk, 0.0f);
  const float in[] = {127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, -126.6f, 3.5f};
  const int8_t expected[] = {127, 3, -3, 1, -1, 1, -127, 4};
  for (size_t j = 0; j < std::size(in); ++j) x[j] = in[j];
  const BlockQ8_0 block = quantize_block(x);
  EXPECT_EQ(block.d, 0x3c00);  // fp16 1.0
  for (size_t j = 0; j < std::size(in); ++j) EXPECT_EQ(block.qs[j], expected[j]) << "at " << j;
  for (size_t j = std::size(in); j < size_t(kQk); ++j) EXPECT_EQ(block.qs[j], 0);
}

TEST(BlockQ8_0Test, HandComputedBlockWithScaleTwo) {
  std::vector<float> x(kQk, 0.0f);
  x[0] = -254.0f;  // amax 254 -> d = 2, 1/d = 0.5 exactly
  x[1] = 3.0f;     // 1.5 -> 2
  x[2] = -1.0f;    // -0.5 -> -1
  x[3] = 0.99f;    // 0.495 -> 0
  x[31] = 200.0f;  // 100
  const BlockQ8_0 block = quantize_block(x);
  EXPECT_EQ(block.d, 0x4000);  // fp16 2.0
  EXPECT_EQ(block.qs[0], -127);
  EXPECT_EQ(block.qs[1], 2);
  EXPECT_EQ(block.qs[2], -1);
  EXPECT_EQ(block.qs[3], 0);
  EXPECT_EQ(block.qs[31], 100);
}

TEST(BlockQ8_0Test, AllZeroBlockHasZeroScale) {
  std::vector<float> x(kQk, 0.0f);
  x[3] = -0.0f;
  const BlockQ8_0 block = quantize_block(x);
  EXPECT_EQ(block.d, 0x0000);
  for (int8_t q : block.qs) EXPECT_EQ(q, 0);
  std::vector<float> y(kQk, 1.0f);
  dequantize_row_q8_0(&block, y.data(), kQk);
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

TEST(BlockQ8_0Test, OneHugeValueFlushesTheRestToZero) {
  std::vector<float> x(kQk);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  for (float& v : x) v = small(rng);
  x[5] = 60000.0f;  // d = 472.4: every |x| <= 1 is below d / 2
  const BlockQ8_0 block = quantize_block(x);
  EXPECT_EQ(block.d, float_to_fp16(60000.0f / 127.0f));
  for (int j = 0; j < kQk; ++j) EXPECT_EQ(block.qs[j], j == 5 ? 127 : 0) << "at " << j;
  std::vector<float> y(kQk);
  dequantize_row_q8_0(&block, y.data(), kQk);
  EXPECT_NEAR(y[5], 60000.0f, 0.5f * 472.5f);
}

TEST(BlockQ8_0Test, NegativeMaxMapsToMinus127) {
  std::vector<float> x(kQk, 0.25f);
  x[9] = -100.0f;
  x[10] = 40.0f;
  const BlockQ8_0 block = quantize_block(x);
  EXPECT_EQ(block.d, float_to_fp16(100.0f / 127.0f));
  EXPECT_FALSE(block.d & 0x8000);  // Q8_0 scales are never negative
  EXPECT_EQ(block.qs[9], -127);
  EXPECT_EQ(block.qs[10], 51);  // 40 * 1.27 = 50.8
  EXPECT_EQ(block.qs[0], 0);    // 0.3175 -> 0
}

TEST(BlockQ8_0Test, BlocksOfARowAreIndependent) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> x(size_t(3 * kQk));
  for (float& v : x) v = dist(rng);
  x[40] = 90.0f;  // a large value in block 1 must not change blocks 0 and 2
  BlockQ8_0 row[3];
  quantize_row_q8_0(x.data(), row, 3 * kQk);
  for (int b = 0; b < 3; ++b) {
    BlockQ8_0 single;
    quantize_row_q8_0(x.data() + b * kQk, &single, kQk);
    EXPECT_EQ(std::memcmp(&single, &row[b], sizeof(single)), 0) << "block " << b;
  }
}

// The bound: with d = amax / 127 (f32) and d16 = fp16(d) the stored scale, q = round(x * (1/d)) is within
// 0.5 (+ two f32 roundings, < 2e-5 at |q| <= 127) of x / d, so |q * d - x| <= d * (0.5 + 2e-5); storing d16 adds
// |q| * |d16 - d| <= 127 * |d16 - d|. Since |d16 - d| <= 2^-11 d for a normal fp16 scale, that is
// |err| <= 0.563 d16: not quite half a step, because the integers were chosen with the unrounded scale. Below
// 2^-14 (amax < 2e-3) d16 is subnormal and only the first form holds.
TEST(BlockQ8_0Test, RoundTripErrorIsWithinTheBound) {
  std::mt19937 rng(3);
  for (float scale : {1e-3f, 0.1f, 1.0f, 37.0f, 1e3f}) {
    std::uniform_real_distribution<float> dist(-scale, scale);
    const int64_t n = 64 * kQk;
    std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
    for (float& v : x) v = dist(rng);
    std::vector<BlockQ8_0> blocks(size_t(n / kQk));
    quantize_row_q8_0(x.data(), blocks.data(), n);
    dequantize_row_q8_0(blocks.data(), y.data(), n);
    for (int64_t b = 0; b < n / kQk; ++b) {
      float amax = 0.0f;
      for (int64_t j = 0; j < kQk; ++j) amax = std::fmax(amax, std::fabs(x[size_t(b * kQk + j)]));
      const double d = amax / 127.0f;
      const double d16 = fp16_to_float(blocks[size_t(b)].d);
      const double bound = d * (0.5 + 2e-5) + 127.0 * std::fabs(d16 - d);
      for (int64_t j = 0; j < kQk; ++j) {
        const size_t k = size_t(b * kQk + j);
        const double err = std::fabs(double(y[k]) - double(x[k]));
        ASSERT_LE(err, bound) << "scale " << scale << " at " << k;
        // The relative form needs a normal fp16 scale; at scale 1e-3, d ~ 8e-6 is an fp16 subnormal.
        if (d16 >= 0x1p-14) {
          ASSERT_LE(err, 0.563 * d16) << "scale " << scale << " at " << k;
        }
      }
    }
  }
}

// Bytes written by ggml's quantize_row_q8_0_ref (llama.cpp's ggml-quants.c, built with gcc -O2 on x86-64)
// for three blocks of an exact integer pattern; the third block's max is negative. Byte compatibility with GGUF
// files written by llama-quantize rests on this.
TEST(BlockQ8_0Test, MatchesGgmlReferenceBytes) {
  std::vector<float> x(96);
  for (uint32_t i = 0; i < 96; ++i) x[i] = float(int((i * 7919u + 13u) % 2001u) - 1000) / 64.0f;
  x[70] = -20.0f;
  const uint8_t expected[3 * 34] = {
      0xc6, 0x2f, 0x81, 0x78, 0x6d, 0x62, 0x57, 0x4c, 0x41, 0x36, 0x2b, 0x20, 0x15, 0x0a, 0xff, 0xf4, 0xe9,
      0xde, 0xd3, 0xc9, 0xbe, 0xb3, 0xa8, 0x9d, 0x92, 0x87, 0x7d, 0x73, 0x68, 0x5d, 0x52, 0x47, 0x3c, 0x31,
      0xb7, 0x2f, 0x26, 0x1b, 0x10, 0x05, 0xfa, 0xef, 0xe4, 0xd9, 0xce, 0xc3, 0xb8, 0xad, 0xa2, 0x97, 0x8c,
      0x81, 0x79, 0x6e, 0x63, 0x58, 0x4d, 0x42, 0x37, 0x2c, 0x21, 0x16, 0x0b, 0x00, 0xf5, 0xea, 0xdf, 0xd4,
      0x0a, 0x31, 0xd6, 0xcd, 0xc5, 0xbd, 0xb4, 0xac, 0x81, 0x61, 0x59, 0x51, 0x48, 0x40, 0x37, 0x2f, 0x26,
      0x1e, 0x16, 0x0d, 0x05, 0xfc, 0xf4, 0xeb, 0xe3, 0xda, 0xd2, 0xca, 0xc1, 0xb9, 0xb0, 0xa8, 0x9f, 0x5e,
  };
  BlockQ8_0 blocks[3];
  quantize_row_q8_0(x.data(), blocks, 96);
  uint8_t actual[sizeof(blocks)];
  std::memcpy(actual, blocks, sizeof(blocks));
  for (size_t k = 0; k < sizeof(actual); ++k) EXPECT_EQ(int(actual[k]), int(expected[k])) << "byte " << k;
}

TEST(BlockQ8_0DeathTest, RowsMustBeWholeBlocks) {
  std::vector<float> x(40);
  BlockQ8_0 blocks[2];
  EXPECT_DEATH(quantize_row_q8_0(x.data(), blocks, 40), "whole blocks of 32");
}

}  // namespace
}  // namespace pagoda::quant
