// Q4_1 and Q5_1 blocks decoded to integers, scale and minimum and repacked 8 rows at a time
// (quant/block_legacy_x8.h): q * d + m gives ggml's dequantized floats bit for bit (so the decoding describes the
// blocks completely), repacking then decoding a row gives back exactly the same integers, scale and minimum, and a
// hand-built Q5_1 block's fifth bits land on the values they belong to. The Q8_0 activations the Q4_1/Q5_1 kernels
// read are ggml's quantize_row_q8_1 blocks (written out here) but for q8_1's fp16 sum, which they keep exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "quant/block_legacy_x8.h"
#include "quant/block_q8_0.h"

namespace pagoda::quant {
namespace {

// Random bytes, with fp16 d in [2^-10, 2^-6) and m of either sign in [2^-6, 2^-2).
template <class Block>
std::vector<Block> random_affine_blocks(std::mt19937& rng, int64_t n) {
  std::vector<Block> blocks(static_cast<size_t>(n));
  auto* bytes = reinterpret_cast<uint8_t*>(blocks.data());
  for (size_t i = 0; i < blocks.size() * sizeof(Block); ++i) bytes[i] = uint8_t(rng());
  std::uniform_real_distribution<float> step(1.0f / 1024, 1.0f / 64), min(1.0f / 64, 1.0f / 4);
  for (Block& b : blocks) {
    b.d = float_to_fp16(step(rng));
    b.m = float_to_fp16(rng() % 2 ? min(rng) : -min(rng));
  }
  return blocks;
}

uint32_t affine_f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

template <class Plain, class Group>
void check_affine_type(void (*dequantize)(const Plain*, float*, int64_t), void (*repack)(const Plain*, Group*, int64_t, int64_t),
                int max_q) {
  std::mt19937 rng(7);
  const int64_t num_rows = 16, num_blocks = 3;
  const std::vector<Plain> plain = random_affine_blocks<Plain>(rng, num_rows * num_blocks);
  std::vector<Group> groups(size_t(num_rows / 8 * num_blocks));
  repack(plain.data(), groups.data(), num_rows, num_blocks);
  std::vector<float> want(32);
  int top = 0;
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t b = 0; b < num_blocks; ++b) {
      const Plain& blk = plain[size_t(r * num_blocks + b)];
      DecodedAffineBlock s, back;
      decode_affine_block(blk, s);
      dequantize(&blk, want.data(), 32);
      for (int i = 0; i < 32; ++i) {
        ASSERT_LE(int(s.q[i]), max_q);
        top = std::max(top, int(s.q[i]));
        const float value = float(s.q[i]) * fp16_to_float(s.d) + fp16_to_float(s.m);
        ASSERT_EQ(affine_f32_bits(value), affine_f32_bits(want[size_t(i)])) << "row " << r << " block " << b << " value " << i;
      }
      decode_affine_block(groups[size_t(r / 8 * num_blocks + b)], r % 8, back);
      EXPECT_EQ(back.d, s.d);
      EXPECT_EQ(back.m, s.m);
      EXPECT_EQ(std::memcmp(back.q, s.q, 32), 0) << "row " << r << " block " << b;
    }
  EXPECT_EQ(top, max_q);  // random bytes reach the largest quant, so its top bit was exercised
}

TEST(BlockLegacyX8Test, Q4_1DecodesAndRepacksExactly) { check_affine_type(dequantize_row_q4_1, repack_q4_1x8, 15); }
TEST(BlockLegacyX8Test, Q5_1DecodesAndRepacksExactly) { check_affine_type(dequantize_row_q5_1, repack_q5_1x8, 31); }

TEST(BlockLegacyX8Test, Q5_1FifthBitsLandOnTheirValues) {
  // Row 3 of a group has only the fifth bits of values 5 and 22 set (qh bits 5 and 22), nibbles 0: after repacking
  // those two values are 16 and every other value of every row is 0.
  std::vector<BlockQ5_1> plain(8);
  const uint32_t qh = (1u << 5) | (1u << 22);
  std::memcpy(plain[3].qh, &qh, 4);
  BlockQ5_1x8 group;
  repack_q5_1x8(plain.data(), &group, 8, 1);
  for (int64_t r = 0; r < 8; ++r) {
    DecodedAffineBlock s;
    decode_affine_block(group, r, s);
    for (int i = 0; i < 32; ++i)
      EXPECT_EQ(int(s.q[i]), r == 3 && (i == 5 || i == 22) ? 16 : 0) << "row " << r << " value " << i;
  }
  // Value 5 is word 1's low nibble k = 1 (byte 4 * 3 + 1, bit 1); value 22 word 1's high nibble k = 2 (bit 5).
  EXPECT_EQ(group.qh[0][13], 1u << 1);
  EXPECT_EQ(group.qh[0][14], 1u << 5);
}

TEST(BlockLegacyX8Test, Q8_0ActivationsAreGgmlsQ8_1WithItsSumExact) {
  // ggml's quantize_row_q8_1_ref per 32 values: d = amax / 127, id = 1 / d (0 for d = 0), q = roundf(x id), fp16 d,
  // s = fp16(d * sum(q)). Fixed inputs: a seeded random row (values of both signs, one block of them small), and an
  // all-zero block.
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> value(-3.0f, 3.0f);
  std::vector<float> x(32 * 6);
  for (float& v : x) v = value(rng);
  for (int i = 64; i < 96; ++i) x[size_t(i)] *= 1.0e-3f;
  for (int i = 96; i < 128; ++i) x[size_t(i)] = 0.0f;
  std::vector<BlockQ8_0> ours(x.size() / 32);
  quantize_row_q8_0(x.data(), ours.data(), int64_t(x.size()));
  for (size_t b = 0; b < ours.size(); ++b) {
    const float* xb = x.data() + 32 * b;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = int(std::roundf(xb[j] * id));
      ASSERT_EQ(int(ours[b].qs[j]), q) << "block " << b << " value " << j;
      sum += q;
    }
    EXPECT_EQ(ours[b].d, float_to_fp16(d)) << "block " << b;
    // The kernels' f32 sum term, fp16_to_float(d) * sum, rounds to ggml's fp16 s up to the scale's own rounding.
    const float s_ours = fp16_to_float(ours[b].d) * float(sum), s_ggml = fp16_to_float(float_to_fp16(d * float(sum)));
    EXPECT_NEAR(s_ours, s_ggml, 2e-3f * std::fabs(s_ggml) + 1e-30f) << "block " << b;
  }
}

}  // namespace
}  // namespace pagoda::quant
