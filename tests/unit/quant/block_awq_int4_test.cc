// AWQ INT4 groups: block layout and nibble order, hand-computed zero point and rounding, odd groups (all zero,
// all positive, all negative), and the quantize -> dequantize bound |x - x'| <= d / 2 for every group size.
#include "quant/block_awq_int4.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"

namespace pagoda::quant {
namespace {

TEST(BlockAwqInt4Test, LayoutAndNibbleOrder) {
  EXPECT_EQ(awq_int4_row_bytes(128, 32), 80);
  EXPECT_EQ(awq_int4_row_bytes(128, 64), 72);
  EXPECT_EQ(awq_int4_row_bytes(128, 128), 68);
  // d = 2, zero = 3; value 32k + j is the low nibble of qs[16k + j], value 32k + 16 + j the high nibble.
  BlockAwqInt4G64 block{};
  block.d = float_to_fp16(2.0f);
  block.zero = 3;
  for (int j = 0; j < 32; ++j) block.qs[j] = uint8_t((j % 16) | ((15 - j % 16) << 4));
  std::vector<float> y(64);
  dequantize_row_awq_int4<64>(&block, y.data(), 64);
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 16; ++j) {
      EXPECT_EQ(y[size_t(32 * k + j)], float((j - 3) * 2)) << k << " " << j;
      EXPECT_EQ(y[size_t(32 * k + 16 + j)], float((15 - j - 3) * 2)) << k << " " << j;
    }
}

TEST(BlockAwqInt4Test, HandComputedGroup) {
  // lo = -3, hi = 12: d = 15 / 15 = 1, zero = round(3) = 3, q = round(x) + 3.
  std::vector<float> x(32, 0.0f);
  const float in[] = {-3.0f, 12.0f, 0.5f, -0.5f, 2.49f, 7.5f};
  for (size_t i = 0; i < std::size(in); ++i) x[i] = in[i];
  BlockAwqInt4G32 block{};
  quantize_row_awq_int4<32>(x.data(), &block, 32);
  EXPECT_EQ(fp16_to_float(block.d), 1.0f);
  EXPECT_EQ(block.zero, 3);
  EXPECT_EQ(block.reserved, 0);
  std::vector<float> y(32);
  dequantize_row_awq_int4<32>(&block, y.data(), 32);
  const float expected[] = {-3.0f, 12.0f, 1.0f, -1.0f, 2.0f, 8.0f};  // half away from zero
  for (size_t i = 0; i < std::size(expected); ++i) EXPECT_EQ(y[i], expected[i]) << i;
  for (size_t i = std::size(expected); i < 32; ++i) EXPECT_EQ(y[i], 0.0f) << i;  // zero is exact
}

TEST(BlockAwqInt4Test, OneSidedAndZeroGroups) {
  BlockAwqInt4G32 block{};
  std::vector<float> y(32);
  std::vector<float> zeros(32, 0.0f);
  quantize_row_awq_int4<32>(zeros.data(), &block, 32);
  EXPECT_EQ(block.d, 0);
  dequantize_row_awq_int4<32>(&block, y.data(), 32);
  for (float v : y) EXPECT_EQ(v, 0.0f);
  // All positive: the range is widened to [0, max], so zero = 0 and max maps to 15.
  std::vector<float> pos(32);
  for (int j = 0; j < 32; ++j) pos[size_t(j)] = 1.0f + float(j);
  quantize_row_awq_int4<32>(pos.data(), &block, 32);
  EXPECT_EQ(block.zero, 0);
  dequantize_row_awq_int4<32>(&block, y.data(), 32);
  EXPECT_NEAR(y[31], 32.0f, 1e-2f);
  // All negative: zero = 15.
  for (float& v : pos) v = -v;
  quantize_row_awq_int4<32>(pos.data(), &block, 32);
  EXPECT_EQ(block.zero, 15);
}

template <int64_t kGroup>
void check_error_bound() {
  std::mt19937 rng(11);
  for (float scale : {1e-3f, 0.05f, 1.0f, 100.0f}) {
    for (float shift : {0.0f, 0.7f, -2.0f}) {
      std::normal_distribution<float> dist(shift * scale, scale);
      const int64_t n = 8 * kGroup;
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = dist(rng);
      std::vector<BlockAwqInt4<kGroup>> blocks(size_t(n / kGroup));
      quantize_row_awq_int4<kGroup>(x.data(), blocks.data(), n);
      std::vector<float> y(static_cast<size_t>(n));
      dequantize_row_awq_int4<kGroup>(blocks.data(), y.data(), n);
      for (int64_t g = 0; g < n / kGroup; ++g) {
        float lo = 0.0f, hi = 0.0f;
        for (int64_t j = 0; j < kGroup; ++j) {
          lo = std::min(lo, x[size_t(g * kGroup + j)]);
          hi = std::max(hi, x[size_t(g * kGroup + j)]);
        }
        const float d = fp16_to_float(blocks[size_t(g)].d);
        // d is (hi - lo) / 15 rounded to fp16 (relative error <= 2^-11): the 15 steps may fall short of the range
        // by 15 * |d - d_exact| at one end.
        const float bound = 0.5f * d + 15.0f * (hi - lo) / 15.0f * 0x1p-11f + 1e-6f * (hi - lo);
        for (int64_t j = 0; j < kGroup; ++j)
          ASSERT_LE(std::fabs(x[size_t(g * kGroup + j)] - y[size_t(g * kGroup + j)]), bound)
              << "group " << kGroup << " scale " << scale << " shift " << shift << " at " << g * kGroup + j;
      }
    }
  }
}

TEST(BlockAwqInt4Test, ErrorIsAtMostHalfAStep) {
  check_error_bound<32>();
  check_error_bound<64>();
  check_error_bound<128>();
}

TEST(BlockAwqInt4Test, RuntimeGroupMatchesTemplate) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(256);
  for (float& v : x) v = dist(rng);
  std::vector<BlockAwqInt4G64> typed(4);
  std::vector<uint8_t> untyped(size_t(awq_int4_row_bytes(256, 64)));
  quantize_row_awq_int4<64>(x.data(), typed.data(), 256);
  quantize_row_awq_int4(x.data(), untyped.data(), 256, 64);
  EXPECT_EQ(std::memcmp(typed.data(), untyped.data(), untyped.size()), 0);
}

}  // namespace
}  // namespace pagoda::quant
