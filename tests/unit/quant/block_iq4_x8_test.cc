// 4-bit codebook blocks (IQ4_NL, IQ4_XS, MXFP4) decoded to integers and a scale and repacked 8 rows at a time
// (quant/block_iq4_x8.h): scale x level gives ggml's dequantized floats bit for bit (so the decoding describes the
// blocks completely), and repacking then decoding a row gives back exactly the same integers and scale.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "quant/block_iq4_x8.h"

namespace pagoda::quant {
namespace {

// Random bytes, with fp16 scales of either sign in [2^-10, 2^-6) (MXFP4: every exponent byte, subnormal scales
// included).
template <class Block>
std::vector<Block> random_codebook_blocks(std::mt19937& rng, int64_t n) {
  std::vector<Block> blocks(static_cast<size_t>(n));
  auto* bytes = reinterpret_cast<uint8_t*>(blocks.data());
  for (size_t i = 0; i < blocks.size() * sizeof(Block); ++i) bytes[i] = uint8_t(rng());
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f / 64);
  if constexpr (requires { blocks[0].d; })
    for (Block& b : blocks) b.d = float_to_fp16(rng() % 2 ? scale(rng) : -scale(rng));
  return blocks;
}

template <class Plain, class Group>
void check_codebook_type(void (*dequantize)(const Plain*, float*, int64_t),
                void (*repack)(const Plain*, Group*, int64_t, int64_t)) {
  std::mt19937 rng(7);
  constexpr int64_t kSubBlocks = Plain::kNumValues / 32;
  const int64_t num_rows = 16, num_blocks = 3;
  const std::vector<Plain> plain = random_codebook_blocks<Plain>(rng, num_rows * num_blocks);
  std::vector<Group> groups(size_t(num_rows / 8 * num_blocks));
  repack(plain.data(), groups.data(), num_rows, num_blocks);
  std::vector<float> want(Plain::kNumValues);
  DecodedCodebookBlock s, back;
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t b = 0; b < num_blocks; ++b) {
      const Plain& block = plain[size_t(r * num_blocks + b)];
      dequantize(&block, want.data(), Plain::kNumValues);
      for (int64_t j = 0; j < kSubBlocks; ++j) {
        decode_codebook_block(block, j, s);
        for (int i = 0; i < 32; ++i) {
          const float got = s.scale * float(s.levels[i]);
          ASSERT_EQ(std::memcmp(&got, &want[size_t(32 * j + i)], sizeof(float)), 0)
              << "row " << r << " block " << b << " value " << 32 * j + i;
        }
        decode_codebook_block(groups[size_t(r / 8 * num_blocks + b)], r % 8, j, back);
        EXPECT_EQ(std::memcmp(&s.scale, &back.scale, sizeof(float)), 0) << "row " << r << " block " << b;
        EXPECT_EQ(std::memcmp(s.levels, back.levels, sizeof(s.levels)), 0) << "row " << r << " block " << b;
      }
    }
}

TEST(BlockIq4x8Test, DecodingIsTheDequantizationAndRepackingLosesNothing) {
  check_codebook_type<BlockIQ4_NL, BlockIQ4_NLx8>(dequantize_row_iq4_nl, repack_iq4_nlx8);
  check_codebook_type<BlockIQ4_XS, BlockIQ4_XSx8>(dequantize_row_iq4_xs, repack_iq4_xsx8);
  check_codebook_type<BlockMXFP4, BlockMXFP4x8>(dequantize_row_mxfp4, repack_mxfp4x8);
}

TEST(BlockIq4x8Test, Mxfp4ScalesCoverTheSubnormalsAndTheTop) {
  EXPECT_EQ(mxfp4_half_scale(0), std::ldexp(1.0f, -128));
  EXPECT_EQ(mxfp4_half_scale(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(mxfp4_half_scale(128), 1.0f);
  EXPECT_EQ(mxfp4_half_scale(255), std::ldexp(1.0f, 127));
}

}  // namespace
}  // namespace pagoda::quant
