// Q4_1, Q5_0, Q5_1 dequantization against values computed from each format's definition on blocks the test packs
// itself (nibble order, the fifth bits' little-endian u32), bit for bit with ggml's f32 arithmetic: negative and
// subnormal d, negative m, quants at both ends. Q5_0 carried in Q8_0 (quant/kquant_carrier.h) keeps the block's d and
// every value, bit for bit.
#include "quant/block_legacy_quants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "ggml_block_test_util.h"
#include "quant/block_q8_0.h"
#include "quant/kquant_carrier.h"

namespace pagoda::quant {
namespace {

using testing::expect_same_bits;
using testing::f32_bits;
using testing::pack_nibbles;

const uint16_t kMins[] = {0x0000, 0xc800, 0x3c00, 0xfbff};

// Bit j of the little-endian u32 = element j's bit 4.
void pack_fifth_bits(const int q[32], uint8_t qh[4]) {
  std::memset(qh, 0, 4);
  for (int j = 0; j < 32; ++j) qh[j / 8] |= uint8_t(((q[j] >> 4) & 1) << (j % 8));
}

TEST(BlockLegacyQuantsTest, Layouts) {
  EXPECT_EQ(sizeof(BlockQ4_1), 20u);
  EXPECT_EQ(sizeof(BlockQ5_0), 22u);
  EXPECT_EQ(sizeof(BlockQ5_1), 24u);
}

TEST(BlockLegacyQuantsTest, Q4_1HandBuilt) {
  // d = 2, m = -15: value j = 2 * q - 15 with q = j % 16.
  int q[32];
  for (int j = 0; j < 32; ++j) q[j] = j % 16;
  BlockQ4_1 b{};
  b.d = 0x4000;
  b.m = 0xcb80;
  pack_nibbles(q, b.qs);
  std::vector<float> y(32);
  dequantize_row_q4_1(&b, y.data(), 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[size_t(j)], float(2 * (j % 16) - 15)) << j;
}

TEST(BlockLegacyQuantsTest, AllThreeRandomAndEdges) {
  std::mt19937 rng(5);
  for (uint16_t d : testing::kFp16Scales) {
    for (uint16_t m : kMins) {
      for (const bool extremes : {false, true}) {
        int q4[2][32], q5[2][32];
        BlockQ4_1 b41[2]{};
        BlockQ5_0 b50[2]{};
        BlockQ5_1 b51[2]{};
        for (int k = 0; k < 2; ++k) {
          for (int j = 0; j < 32; ++j) {
            q4[k][j] = extremes ? 15 * (j % 2) : int(rng() % 16);
            q5[k][j] = extremes ? 31 * ((j + k) % 2) : int(rng() % 32);
          }
          b41[k].d = b50[k].d = b51[k].d = d;
          b41[k].m = b51[k].m = m;
          pack_nibbles(q4[k], b41[k].qs);
          pack_nibbles(q5[k], b50[k].qs);
          pack_nibbles(q5[k], b51[k].qs);
          pack_fifth_bits(q5[k], b50[k].qh);
          pack_fifth_bits(q5[k], b51[k].qh);
        }
        std::vector<float> y41(64), y50(64), y51(64);
        dequantize_row_q4_1(b41, y41.data(), 64);
        dequantize_row_q5_0(b50, y50.data(), 64);
        dequantize_row_q5_1(b51, y51.data(), 64);
        const float df = fp16_to_float(d), mf = fp16_to_float(m);
        for (int i = 0; i < 64; ++i) {
          const int k = i / 32, j = i % 32;
          ASSERT_EQ(f32_bits(y41[size_t(i)]), f32_bits(float(q4[k][j]) * df + mf)) << "q4_1 " << i;
          ASSERT_EQ(f32_bits(y50[size_t(i)]), f32_bits(float(q5[k][j] - 16) * df)) << "q5_0 " << i;
          ASSERT_EQ(f32_bits(y51[size_t(i)]), f32_bits(float(q5[k][j]) * df + mf)) << "q5_1 " << i;
        }
      }
    }
  }
}

TEST(BlockLegacyQuantsTest, Q5_0CarriedInQ8_0KeepsEveryValue) {
  std::mt19937 rng(9);
  for (uint16_t d : testing::kFp16Scales) {
    for (const bool extremes : {false, true}) {
      int q[3][32];
      BlockQ5_0 src[3]{};
      for (int k = 0; k < 3; ++k) {
        for (int j = 0; j < 32; ++j) q[k][j] = extremes ? 31 * ((j + k) % 2) : int(rng() % 32);
        src[k].d = d;
        pack_nibbles(q[k], src[k].qs);
        pack_fifth_bits(q[k], src[k].qh);
      }
      BlockQ8_0 carried[3];
      ASSERT_TRUE(carry_row_as_q8_0(src, carried, 96));
      std::vector<float> want(96), got(96);
      dequantize_row_q5_0(src, want.data(), 96);
      dequantize_row_q8_0(carried, got.data(), 96);
      for (int i = 0; i < 96; ++i) {
        ASSERT_EQ(carried[i / 32].qs[i % 32], q[i / 32][i % 32] - 16) << i;
        ASSERT_EQ(f32_bits(got[size_t(i)]), f32_bits(want[size_t(i)])) << "value " << i << " d " << d;
      }
      for (const BlockQ8_0& b : carried) EXPECT_EQ(b.d, d);
    }
  }
}

}  // namespace
}  // namespace pagoda::quant
