// K-quant super-blocks (Q2_K ... Q6_K, and pagoda's Q7_K) decoded to integers and repacked 8 rows at a time (quant/block_kquant_x8.h): the
// decoded integers give ggml's dequantized floats bit for bit (so they describe the blocks completely), and repacking
// then decoding a row gives back exactly those integers.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "quant/block_kquant_x8.h"

namespace pagoda::quant {
namespace {

// Random bytes, with fp16 scales of either sign in [2^-10, 2^-6).
template <class Block>
std::vector<Block> random_blocks(std::mt19937& rng, int64_t n) {
  std::vector<Block> blocks(static_cast<size_t>(n));
  auto* bytes = reinterpret_cast<uint8_t*>(blocks.data());
  for (size_t i = 0; i < blocks.size() * sizeof(Block); ++i) bytes[i] = uint8_t(rng());
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f / 64);
  for (Block& b : blocks) {
    b.d = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
    if constexpr (requires { b.dmin; }) b.dmin = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
    if constexpr (std::is_same_v<Block, BlockQ7_K>)
      for (uint8_t& q : b.q) q &= 127;  // Q7_K's quants are 7 bits
  }
  return blocks;
}

// How a type's decoded integers make its values: with mins per `sub` values (Q4_K, Q5_K: 32; Q2_K: 16), or with
// scales per 16 values and a fixed offset (Q6_K: 32; Q3_K: 4; Q7_K: 64).
struct Formula {
  bool offset_form;
  int sub;     // values per scale (and min)
  int offset;  // offset_form only
};
constexpr Formula kWithMins32{false, 32, 0}, kWithMins16{false, 16, 0}, kOffset32{true, 16, 32}, kOffset4{true, 16, 4},
                  kOffset64{true, 16, 64};

// ggml's formulas over the decoded integers: d1 = d * scale, m1 = dmin * min, value = d1 * q - m1, or
// d1 * (q - offset).
std::vector<float> values_of(const DecodedSuperBlock& s, Formula f) {
  std::vector<float> out(kQK_K);
  const float d = fp16_to_float(s.d), dmin = fp16_to_float(s.dmin);
  for (int i = 0; i < kQK_K; ++i) {
    if (f.offset_form) {
      out[size_t(i)] = d * float(s.scales[i / 16]) * float(int(s.q[i]) - f.offset);
    } else {
      const float d1 = d * float(s.scales[i / f.sub]), m1 = dmin * float(s.mins[i / f.sub]);
      out[size_t(i)] = d1 * float(s.q[i]) - m1;
    }
  }
  return out;
}

template <class Block, class Group>
void check_type(void (*dequantize)(const Block*, float*, int64_t),
                void (*repack)(const Block*, Group*, int64_t, int64_t), Formula formula) {
  std::mt19937 rng(11);
  const int64_t num_rows = 16, num_super = 3;
  const std::vector<Block> plain = random_blocks<Block>(rng, num_rows * num_super);
  std::vector<Group> groups(size_t(num_rows / 8 * num_super));
  repack(plain.data(), groups.data(), num_rows, num_super);
  for (int64_t o = 0; o < num_rows; ++o)
    for (int64_t b = 0; b < num_super; ++b) {
      const Block& block = plain[size_t(o * num_super + b)];
      DecodedSuperBlock s, back;
      decode_super_block(block, s);
      std::vector<float> expected(kQK_K);
      dequantize(&block, expected.data(), kQK_K);
      const std::vector<float> got = values_of(s, formula);
      ASSERT_EQ(std::memcmp(got.data(), expected.data(), sizeof(float) * kQK_K), 0) << "row " << o << " block " << b;
      decode_super_block(groups[size_t(o / 8 * num_super + b)], o % 8, back);
      ASSERT_EQ(std::memcmp(&s, &back, sizeof(s)), 0) << "row " << o << " block " << b;
    }
}

TEST(BlockKquantX8Test, Q4_KDecodesToGgmlsValuesAndRepacksLosslessly) {
  check_type<BlockQ4_K, BlockQ4_Kx8>(dequantize_row_q4_K, repack_q4_Kx8, kWithMins32);
}
TEST(BlockKquantX8Test, Q5_KDecodesToGgmlsValuesAndRepacksLosslessly) {
  check_type<BlockQ5_K, BlockQ5_Kx8>(dequantize_row_q5_K, repack_q5_Kx8, kWithMins32);
}
TEST(BlockKquantX8Test, Q6_KDecodesToGgmlsValuesAndRepacksLosslessly) {
  check_type<BlockQ6_K, BlockQ6_Kx8>(dequantize_row_q6_K, repack_q6_Kx8, kOffset32);
}
TEST(BlockKquantX8Test, Q2_KDecodesToGgmlsValuesAndRepacksLosslessly) {
  check_type<BlockQ2_K, BlockQ2_Kx8>(dequantize_row_q2_K, repack_q2_Kx8, kWithMins16);
}
TEST(BlockKquantX8Test, Q3_KDecodesToGgmlsValuesAndRepacksLosslessly) {
  check_type<BlockQ3_K, BlockQ3_Kx8>(dequantize_row_q3_K, repack_q3_Kx8, kOffset4);
}
TEST(BlockKquantX8Test, Q7_KDecodesToItsValuesAndRepacksLosslessly) {
  check_type<BlockQ7_K, BlockQ7_Kx8>(dequantize_row_q7_K, repack_q7_Kx8, kOffset64);
}

TEST(BlockKquantX8Test, RepackingNeedsWholeGroupsOfEightRows) {
  std::mt19937 rng(1);
  const std::vector<BlockQ4_K> plain = random_blocks<BlockQ4_K>(rng, 4);
  std::vector<BlockQ4_Kx8> groups(1);
  EXPECT_DEATH(repack_q4_Kx8(plain.data(), groups.data(), 4, 1), "whole groups of 8 rows");
}

}  // namespace
}  // namespace pagoda::quant
