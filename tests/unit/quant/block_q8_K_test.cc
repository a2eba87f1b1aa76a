// BlockQ8_K: ggml's layout, ggml's reference rounding on hand-computed blocks (ties to even, the sign of the
// largest magnitude folded into d), the 16-value sums, the all-zero block and the round-trip error bound.
#include "quant/block_q8_K.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace pagoda::quant {
namespace {

constexpr int64_t kQkK = kQK_K;

BlockQ8_K quantize_q8_K_block(const std::vector<float>& x) {
  BlockQ8_K block{};
  quantize_row_q8_K(x.data(), &block, kQkK);
  return block;
}

TEST(BlockQ8_KTest, LayoutIsGgmls) {
  EXPECT_EQ(sizeof(BlockQ8_K), 292u);
  EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
}

TEST(BlockQ8_KTest, NegativeMaximumGivesScaleOneAndTiesToEven) {
  // The largest magnitude -127 gives iscale = -127 / -127 = 1, so q = nearest_int(x): ties go to even.
  std::vector<float> x(kQkK, 0.0f);
  const float in[] = {-127.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.49f, 126.6f, 3.5f, -1.5f};
  const int8_t expected[] = {-127, 2, -2, 0, 0, 1, 127, 4, -2};
  for (size_t j = 0; j < std::size(in); ++j) x[j] = in[j];
  const BlockQ8_K block = quantize_q8_K_block(x);
  EXPECT_EQ(block.d, 1.0f);
  for (size_t j = 0; j < std::size(in); ++j) EXPECT_EQ(block.qs[j], expected[j]) << "at " << j;
  for (size_t j = std::size(in); j < size_t(kQkK); ++j) EXPECT_EQ(block.qs[j], 0);
  EXPECT_EQ(block.bsums[0], -127 + 2 - 2 + 0 + 0 + 1 + 127 + 4 - 2);
  for (int k = 1; k < 16; ++k) EXPECT_EQ(block.bsums[k], 0);
}

TEST(BlockQ8_KTest, PositiveMaximumFlipsTheSigns) {
  // m = 254: iscale = -0.5, d = -2; the largest value becomes -127 and every sign turns over.
  std::vector<float> x(kQkK, 0.0f);
  x[0] = 3.0f;      // -1.5 -> -2
  x[1] = -1.0f;     // 0.5 -> 0
  x[17] = 254.0f;   // -127
  x[255] = -5.0f;   // 2.5 -> 2
  x[100] = -254.0f; // the same magnitude later: m stays the first one's
  const BlockQ8_K block = quantize_q8_K_block(x);
  EXPECT_EQ(block.d, -2.0f);
  EXPECT_EQ(block.qs[0], -2);
  EXPECT_EQ(block.qs[1], 0);
  EXPECT_EQ(block.qs[17], -127);
  EXPECT_EQ(block.qs[100], 127);
  EXPECT_EQ(block.qs[255], 2);
  EXPECT_EQ(block.bsums[0], -2);
  EXPECT_EQ(block.bsums[1], -127);
  EXPECT_EQ(block.bsums[6], 127);
  EXPECT_EQ(block.bsums[15], 2);
}

TEST(BlockQ8_KTest, AllZeroBlockIsZero) {
  std::vector<float> x(2 * kQkK, 0.0f);
  x[300] = 1.0f;
  BlockQ8_K blocks[2];
  quantize_row_q8_K(x.data(), blocks, 2 * kQkK);
  EXPECT_EQ(blocks[0].d, 0.0f);
  for (int8_t q : blocks[0].qs) EXPECT_EQ(q, 0);
  for (int16_t s : blocks[0].bsums) EXPECT_EQ(s, 0);
  EXPECT_EQ(blocks[1].qs[300 - kQkK], -127);
}

TEST(BlockQ8_KTest, RoundTripIsWithinHalfAStepAndSumsMatch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  const int64_t n = 4 * kQkK;
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (float& v : x) v = dist(rng);
  std::vector<BlockQ8_K> blocks(size_t(n / kQkK));
  quantize_row_q8_K(x.data(), blocks.data(), n);
  dequantize_row_q8_K(blocks.data(), y.data(), n);
  for (int64_t b = 0; b < n / kQkK; ++b) {
    const float step = std::fabs(blocks[size_t(b)].d);
    for (int64_t j = 0; j < kQkK; ++j)
      EXPECT_LE(std::fabs(x[size_t(b * kQkK + j)] - y[size_t(b * kQkK + j)]), 0.5f * step * 1.0001f);
    for (int k = 0; k < 16; ++k) {
      int32_t sum = 0;
      for (int i = 0; i < 16; ++i) sum += blocks[size_t(b)].qs[16 * k + i];
      EXPECT_EQ(blocks[size_t(b)].bsums[k], sum);
    }
  }
}

}  // namespace
}  // namespace pagoda::quant
