// TQ1_0 and TQ2_0 dequantization against values computed from each format's definition (trits written in base 3 as
// ggml's quantizer writes them; 2-bit fields), and their lossless Q2_K carrier (quant/kquant_carrier.h): the carrier's
// dequantized values equal the source's for every fp16 scale the helpers list and random quant bytes, and a block
// with a non-finite scale is declined.
#include "quant/block_ternary.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/half.h"
#include "ggml_block_test_util.h"
#include "quant/kquant_carrier.h"

namespace pagoda::quant {
namespace {

using testing::f32_bits;

// Five trits (t[0] most significant) -> ggml's byte: the base-3 number as a fraction of 243, rounded up to 256ths.
uint8_t pack_trits(const int* t, int count) {
  int v = 0;
  for (int n = 0; n < count; ++n) v = v * 3 + t[n];
  for (int n = count; n < 5; ++n) v *= 3;  // qh's four trits sit in the top of five
  return uint8_t((v * 256 + 242) / 243);
}

TEST(BlockTernaryTest, Layouts) {
  EXPECT_EQ(sizeof(BlockTQ1_0), 54u);
  EXPECT_EQ(sizeof(BlockTQ2_0), 66u);
}

TEST(BlockTernaryTest, Tq1_0) {
  std::mt19937 rng(10);
  for (uint16_t d : testing::kFp16Scales) {
    int t[256];
    for (int& v : t) v = int(rng() % 3);
    BlockTQ1_0 b{};
    b.d = d;
    int five[5];
    for (int m = 0; m < 32; ++m) {
      for (int n = 0; n < 5; ++n) five[n] = t[32 * n + m];
      b.qs[m] = pack_trits(five, 5);
    }
    for (int m = 0; m < 16; ++m) {
      for (int n = 0; n < 5; ++n) five[n] = t[160 + 16 * n + m];
      b.qs[32 + m] = pack_trits(five, 5);
    }
    for (int j = 0; j < 4; ++j) {
      for (int n = 0; n < 4; ++n) five[n] = t[240 + 4 * n + j];
      b.qh[j] = pack_trits(five, 4);
    }
    std::vector<float> y(256);
    dequantize_row_tq1_0(&b, y.data(), 256);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(f32_bits(y[size_t(i)]), f32_bits(float(t[i] - 1) * fp16_to_float(d))) << "element " << i;
  }
}

TEST(BlockTernaryTest, Tq2_0) {
  std::mt19937 rng(11);
  for (uint16_t d : testing::kFp16Scales) {
    BlockTQ2_0 b{};
    b.d = d;
    int q[256];
    for (int i = 0; i < 256; ++i) {
      q[i] = int(rng() % 4);  // 3 too, which ggml never writes but reads as 2d
      b.qs[32 * (i / 128) + i % 32] |= uint8_t(q[i] << (2 * ((i % 128) / 32)));
    }
    std::vector<float> y(256);
    dequantize_row_tq2_0(&b, y.data(), 256);
    for (int i = 0; i < 256; ++i)
      ASSERT_EQ(f32_bits(y[size_t(i)]), f32_bits(float(q[i] - 1) * fp16_to_float(d))) << "element " << i;
  }
}

// The carrier's values are the source's (compared as numbers: a zero's sign may differ, d * 1 - d being +0).
template <typename Block, typename Dequantize>
void expect_carried_exactly(Dequantize dequantize, uint64_t seed) {
  std::mt19937 rng{uint32_t(seed)};
  constexpr int kBlocks = 4;
  for (uint16_t d : testing::kFp16Scales) {
    std::vector<Block> x(kBlocks);
    for (Block& b : x) {
      auto* bytes = reinterpret_cast<uint8_t*>(&b);
      for (size_t i = 0; i < sizeof(Block); ++i) bytes[i] = uint8_t(rng());
      b.d = d;
    }
    std::vector<BlockQ2_K> carried(kBlocks);
    ASSERT_TRUE(carry_row_as_q2_K(x.data(), carried.data(), 256 * kBlocks));
    std::vector<float> want(256 * kBlocks), got(256 * kBlocks);
    dequantize(x.data(), want.data(), 256 * kBlocks);
    dequantize_row_q2_K(carried.data(), got.data(), 256 * kBlocks);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i << ", d " << d;
  }
  std::vector<Block> inf(1);
  inf[0].d = 0x7c00;
  std::vector<BlockQ2_K> carried(1);
  EXPECT_FALSE(carry_row_as_q2_K(inf.data(), carried.data(), 256)) << "an infinite scale is declined";
}

TEST(BlockTernaryTest, CarriedInQ2_KExactly) {
  expect_carried_exactly<BlockTQ1_0>(dequantize_row_tq1_0, 1);
  expect_carried_exactly<BlockTQ2_0>(dequantize_row_tq2_0, 2);
}

}  // namespace
}  // namespace pagoda::quant
