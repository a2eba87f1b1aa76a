// The lattice i-quants: hand-made blocks whose values follow from the layouts in block_iquants.h (grid point 0 of
// each table, a sign bit, a sub-block scale, IQ1's delta and IQ1_M's scattered d), and random blocks whose
// decoded integers, re-encoded in Q6_K (IQ3/IQ1) or Q7_K (IQ2; quant/kquant_carrier.h), give the dequantizer's
// values; a scale too small for the carrier's fp16 is declined. (Bit-exactness against ggml itself:
// scripts/check/dequant_vs_ggml.sh.)
#include "quant/block_iquants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "ggml_block_test_util.h"
#include "quant/kquant_carrier.h"
#include "quant/lattice_grids.h"

namespace pagoda::quant {
namespace {

using testing::f32_bits;

constexpr uint16_t kOne = 0x3c00;

TEST(BlockIquantsTest, Layouts) {
  EXPECT_EQ(sizeof(BlockIQ3_XXS), 98u);
  EXPECT_EQ(sizeof(BlockIQ3_S), 110u);
  EXPECT_EQ(sizeof(BlockIQ1_S), 50u);
  EXPECT_EQ(sizeof(BlockIQ1_M), 56u);
  EXPECT_EQ(iq_signs_of(0), 0);
  EXPECT_EQ(iq_signs_of(1), 129) << "one negative value makes the eighth negative too";
  EXPECT_EQ(iq_signs_of(3), 3);
}

TEST(BlockIquantsTest, Iq3Xxs) {
  BlockIQ3_XXS b{};
  b.d = kOne;
  const uint32_t w = 2u << 28 | 1u;  // sub-block 0: ls 2; values 0 and 7 negative
  std::memcpy(b.qs + 64, &w, 4);
  std::vector<float> y(256);
  dequantize_row_iq3_xxs(&b, y.data(), 256);
  // (1 * 2.5) * 0.5 * grid point 0's coordinates (4, 4, 4, 4).
  EXPECT_EQ(y[0], -5.0f);
  EXPECT_EQ(y[1], 5.0f);
  EXPECT_EQ(y[7], -5.0f);
  EXPECT_EQ(y[32], 1.0f) << "sub-block 1: ls 0";
}

TEST(BlockIquantsTest, Iq3S) {
  BlockIQ3_S b{};
  b.d = kOne;
  b.scales[0] = 0x21;  // sub-block 0: 3, sub-block 1: 5
  b.signs[0] = 0x10;   // value 4 negative
  b.qs[1] = 1;         // values 4..7: point 1 (1, 1, 1, 3 from the lowest byte: 0x01010103)
  b.qh[1] = 1;         // sub-block 1's values 0..3: point 256
  std::vector<float> y(256);
  dequantize_row_iq3_s(&b, y.data(), 256);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[4], -9.0f);
  EXPECT_EQ(y[5], 3.0f);
  EXPECT_EQ(y[32], 5.0f * float(grid_coordinate(kIq3SGrid[256], 0)));
}

TEST(BlockIquantsTest, Iq1S) {
  BlockIQ1_S b{};
  b.d = kOne;
  b.qh[0] = 0x8000 | 1u << 12;  // sub-block 0: scale 3, delta -1/8
  std::vector<float> y(256);
  dequantize_row_iq1_s(&b, y.data(), 256);
  EXPECT_EQ(y[0], 3.0f * (-1.0f - 0.125f));  // grid point 0: all -1
  EXPECT_EQ(y[32], 1.0f * (-1.0f + 0.125f));
}

TEST(BlockIquantsTest, Iq1M) {
  BlockIQ1_M b{};
  // d = 2 (0x4000): its top nibble 4 in w[3]'s top nibble; half 0's scale 1 (3) in w[0]'s low bits.
  const uint16_t w[4] = {1, 0, 0, 0x4000};
  std::memcpy(b.scales, w, 8);
  b.qh[0] = 0x08;  // group 0's delta negative
  EXPECT_EQ(iq1_m_d(b), 0x4000);
  std::vector<float> y(256);
  dequantize_row_iq1_m(&b, y.data(), 256);
  EXPECT_EQ(y[0], 6.0f * (-1.0f - 0.125f));
  EXPECT_EQ(y[8], 6.0f * (-1.0f + 0.125f));
  EXPECT_EQ(y[16], 2.0f * (-1.0f + 0.125f)) << "half 1: scale 0";
}

TEST(BlockIquantsTest, Iq2Xxs) {
  BlockIQ2_XXS b{};
  b.d = kOne;
  b.qs[2] = 1;        // sub-block 0's sign field 0: values 0 and 7 negative
  b.qs[3] = 2 << 12;  // ls 2
  std::vector<float> y(256);
  dequantize_row_iq2_xxs(&b, y.data(), 256);
  // (1 * 2.5) * 0.25 * grid point 0's coordinates (all 8).
  EXPECT_EQ(y[0], -5.0f);
  EXPECT_EQ(y[1], 5.0f);
  EXPECT_EQ(y[7], -5.0f);
  EXPECT_EQ(y[32], 1.0f) << "sub-block 1: ls 0";
}

TEST(BlockIquantsTest, Iq2XsAndIq2S) {
  BlockIQ2_XS xs{};
  xs.d = kOne;
  xs.scales[0] = 0x10;  // half 0: ls 0, half 1: ls 1
  xs.qs[0] = 1 << 9;    // group 0: point 0, values 0 and 7 negative
  std::vector<float> y(256);
  dequantize_row_iq2_xs(&xs, y.data(), 256);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[7], -1.0f);
  EXPECT_EQ(y[16], 3.0f);
  BlockIQ2_S s{};
  s.d = kOne;
  s.qs[32] = 0x02;  // group 0's value 1 negative
  s.qh[0] = 1;      // group 0: point 256
  dequantize_row_iq2_s(&s, y.data(), 256);
  EXPECT_EQ(y[1], -0.125f * float(grid_coordinate(kIq2SGrid[256], 1)));
  EXPECT_EQ(y[0], 0.125f * float(grid_coordinate(kIq2SGrid[256], 0)));
  EXPECT_EQ(y[8], 1.0f);
}

// Random blocks with a d of 2^-10 .. 4 of either sign: the carrier's values are the dequantizer's, bit for bit.
void dequantize_carrier(const BlockQ6_K* x, float* y, int64_t n) { dequantize_row_q6_K(x, y, n); }
void dequantize_carrier(const BlockQ7_K* x, float* y, int64_t n) { dequantize_row_q7_K(x, y, n); }
bool carry(const BlockIQ2_XXS* x, BlockQ7_K* y, int64_t n) { return carry_row_as_q7_K(x, y, n); }
bool carry(const BlockIQ2_XS* x, BlockQ7_K* y, int64_t n) { return carry_row_as_q7_K(x, y, n); }
bool carry(const BlockIQ2_S* x, BlockQ7_K* y, int64_t n) { return carry_row_as_q7_K(x, y, n); }
template <typename Block>
bool carry(const Block* x, BlockQ6_K* y, int64_t n) {
  return carry_row_as_q6_K(x, y, n);
}

template <typename Block, typename Carrier = BlockQ6_K, typename Dequantize>
void expect_carried_exactly(Dequantize dequantize, void (*set_d)(Block&, uint16_t), uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr int kBlocks = 16;
  std::vector<Block> x(kBlocks);
  for (Block& b : x) {
    auto* bytes = reinterpret_cast<uint8_t*>(&b);
    for (size_t i = 0; i < sizeof(Block); ++i) bytes[i] = uint8_t(rng());
    const float mantissa = 1.0f + float(rng() % 1024) / 1024.0f;
    set_d(b, float_to_fp16((rng() % 2 ? 1.0f : -1.0f) * mantissa * float(1 << (rng() % 12)) / 1024.0f));
  }
  std::vector<Carrier> carried(kBlocks);
  ASSERT_TRUE(carry(x.data(), carried.data(), 256 * kBlocks));
  std::vector<float> want(256 * kBlocks), got(256 * kBlocks);
  dequantize(x.data(), want.data(), 256 * kBlocks);
  dequantize_carrier(carried.data(), got.data(), 256 * kBlocks);
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(f32_bits(got[i]), f32_bits(want[i])) << "element " << i;
}

template <typename Block>
void set_plain_d(Block& b, uint16_t d) {
  b.d = d;
}
void set_iq1_m_d(BlockIQ1_M& b, uint16_t d) {
  uint16_t w[4];
  std::memcpy(w, b.scales, 8);
  for (int i = 0; i < 4; ++i) w[i] = uint16_t((w[i] & 0x0fff) | ((d >> (4 * i)) & 15) << 12);
  std::memcpy(b.scales, w, 8);
}

TEST(BlockIquantsTest, CarriedInQ6_KExactly) {
  expect_carried_exactly<BlockIQ3_XXS>(dequantize_row_iq3_xxs, set_plain_d<BlockIQ3_XXS>, 1);
  expect_carried_exactly<BlockIQ3_S>(dequantize_row_iq3_s, set_plain_d<BlockIQ3_S>, 2);
  expect_carried_exactly<BlockIQ1_S>(dequantize_row_iq1_s, set_plain_d<BlockIQ1_S>, 3);
  expect_carried_exactly<BlockIQ1_M>(dequantize_row_iq1_m, set_iq1_m_d, 4);
}

TEST(BlockIquantsTest, Iq2CarriedInQ7_KExactly) {
  expect_carried_exactly<BlockIQ2_XXS, BlockQ7_K>(dequantize_row_iq2_xxs, set_plain_d<BlockIQ2_XXS>, 5);
  expect_carried_exactly<BlockIQ2_XS, BlockQ7_K>(dequantize_row_iq2_xs, set_plain_d<BlockIQ2_XS>, 6);
  expect_carried_exactly<BlockIQ2_S, BlockQ7_K>(dequantize_row_iq2_s, set_plain_d<BlockIQ2_S>, 7);
}

TEST(BlockIquantsTest, Iq2DecodesToItsCoordinatesAndScales) {
  BlockIQ2_XXS b{};
  b.d = kOne;
  b.qs[2] = 1;       // the first group's sign field 1: values 0 and 7 negative
  b.qs[3] = 0x5000;  // ls 5
  DecodedIquantBlock out;
  decode_iquant_block(b, out);
  EXPECT_EQ(out.shift, 3);
  EXPECT_EQ(out.scales[0], 11);
  EXPECT_EQ(out.scales[1], 11);
  EXPECT_EQ(out.q[0], -int8_t(grid_coordinate(kIq2XxsGrid[0], 0)));
  EXPECT_EQ(out.q[1], grid_coordinate(kIq2XxsGrid[0], 1));
  EXPECT_EQ(out.q[7], -int8_t(grid_coordinate(kIq2XxsGrid[0], 7)));
}

TEST(BlockIquantsTest, ScalesTheCarrierCannotHoldAreDeclined) {
  BlockIQ1_S b{};
  b.d = 0x0001;  // the smallest subnormal: d / 8 is not an fp16
  BlockQ6_K y{};
  EXPECT_FALSE(carry_row_as_q6_K(&b, &y, 256));
  BlockIQ3_S s{};
  s.d = 0x7c00;  // inf
  EXPECT_FALSE(carry_row_as_q6_K(&s, &y, 256));
  s.d = 0x0001;  // shift 0: any finite d is carried as it is
  EXPECT_TRUE(carry_row_as_q6_K(&s, &y, 256));
  BlockIQ2_XS x2{};
  BlockQ7_K y7{};
  x2.d = 0x0001;
  EXPECT_FALSE(carry_row_as_q7_K(&x2, &y7, 256));
  x2.d = 0x0400;  // 2^-14: d / 8 a subnormal fp16, exact
  EXPECT_TRUE(carry_row_as_q7_K(&x2, &y7, 256));
}

}  // namespace
}  // namespace pagoda::quant
