// The Q4_0x8, Q8_0x8 and INT8x8 (8-row interleaved) matmuls: repacking is a lossless byte permutation; AVX2 equals the
// scalar reference bit for bit on random shapes (token tails, several row tiles, row slices as a thread pool cuts
// them, both entry points); and both agree with the plain kernels on the same weights up to f32 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_awq_int4.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0.h"
#include "quant/block_q4_0x8.h"
#include "quant/block_q8_0.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8.h"
#include "quant/row_int8x8.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

using quant::BlockQ4_0;
using quant::BlockQ4_0x8;
using quant::BlockQ8_0;
using quant::BlockQ8_0x8;

struct Weights {
  std::vector<BlockQ4_0> plain;     // [num_out, num_in / 32]
  std::vector<BlockQ4_0x8> packed;  // [num_out / 8, num_in / 32]
};

Weights make_q4_0x8_weights(std::mt19937& rng, int64_t num_out, int64_t num_in) {
  const std::vector<float> w = random_floats(rng, num_out * num_in, 1.0f);
  Weights q;
  q.plain.resize(size_t(num_out * num_in / kQk));
  quant::quantize_row_q4_0(w.data(), q.plain.data(), num_out * num_in);
  q.packed.resize(size_t(num_out / 8 * num_in / kQk));
  quant::repack_q4_0x8(q.plain.data(), q.packed.data(), num_out, num_in / kQk);
  return q;
}

std::vector<BlockQ8_0> quantize_tokens(const std::vector<float>& x, int64_t num_in) {
  std::vector<BlockQ8_0> xq(x.size() / kQk);
  quant::quantize_row_q8_0(x.data(), xq.data(), int64_t(x.size()));
  (void)num_in;
  return xq;
}

TEST(BlockQ4_0x8Test, RepackIsALosslessPermutation) {
  std::mt19937 rng(7);
  const int64_t num_out = 24, num_blocks = 5;
  const Weights w = make_q4_0x8_weights(rng, num_out, num_blocks * kQk);
  for (int64_t o = 0; o < num_out; ++o) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      const BlockQ4_0 back = quant::unpack_q4_0x8_row(w.packed[size_t((o / 8) * num_blocks + b)], o % 8);
      ASSERT_EQ(std::memcmp(&back, &w.plain[size_t(o * num_blocks + b)], sizeof(BlockQ4_0)), 0) << o << " " << b;
    }
  }
  // Same bytes in all: a group's row pointer is where the plain row was.
  EXPECT_EQ(w.packed.size() * sizeof(BlockQ4_0x8), w.plain.size() * sizeof(BlockQ4_0));
}

class RepackedSimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{31};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(RepackedSimdTest);

TEST_P(RepackedSimdTest, MatchesScalarBitForBit) {
  // 2048 inputs x 200 rows: groups of 9216 bytes, so 25 groups cross a 128 KiB tile boundary.
  for (int64_t num_in : {32, 64, 160, 2048}) {
    for (int64_t num_out : {8, 16, 40, 200}) {
      // Token groups of 4 and 8 (the AVX2 and VNNI kernels' widths) with every kind of tail.
      for (int64_t num_tokens : {1, 2, 3, 4, 5, 8, 9, 12, 19}) {
        const Weights w = make_q4_0x8_weights(rng_, num_out, num_in);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
        ref::matmul_q4_0x8(w.packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kQ4_0x8).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
            << "num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens;
      }
    }
  }
}

TEST_P(RepackedSimdTest, ExtremeValuesStayExact) {
  // Every nibble 15 or 0 against activations of +-127: the largest int16 partial sums the kernel can form.
  const int64_t num_in = 256, num_out = 16, num_tokens = 2;
  std::vector<float> wf(size_t(num_out * num_in)), x(size_t(num_tokens * num_in));
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = (i / 7) % 2 ? -8.0f : 7.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127.0f : -127.0f;
  std::vector<BlockQ4_0> plain(wf.size() / kQk);
  quant::quantize_row_q4_0(wf.data(), plain.data(), int64_t(wf.size()));
  std::vector<BlockQ4_0x8> packed(plain.size());
  quant::repack_q4_0x8(plain.data(), packed.data(), num_out, num_in / kQk);
  std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size()), y_plain(y_ref.size());
  ref::matmul_q4_0x8(packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
  simd_->matmul_for(DType::kQ4_0x8).f32(packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
  ref::matmul_q4_0(plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
  for (size_t k = 0; k < y_ref.size(); ++k) {
    ASSERT_EQ(y_simd[k], y_ref[k]) << k;
    ASSERT_NEAR(y_ref[k], y_plain[k], 1e-5 * std::fabs(y_plain[k]) + 1e-3) << k;
  }
}

TEST_P(RepackedSimdTest, RowSlicesAndPrequantizedInputGiveTheSameBits) {
  const int64_t num_in = 192, num_out = 48, num_tokens = 11;
  const Weights w = make_q4_0x8_weights(rng_, num_out, num_in);
  const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 1.0f);
  const std::vector<BlockQ8_0> xq = quantize_tokens(x, num_in);
  for (const KernelTable* table : {simd_, kernels_for(Isa::kScalar)}) {
    std::vector<float> whole(size_t(num_tokens * num_out)), from_f32(whole.size()), sliced(whole.size(), -1.0f);
    table->matmul_for(DType::kQ4_0x8)
        .q8_0(w.packed.data(), xq.data(), whole.data(), num_out, num_in, num_tokens, num_out);
    table->matmul_for(DType::kQ4_0x8).f32(w.packed.data(), x.data(), from_f32.data(), num_out, num_in, num_tokens);
    EXPECT_EQ(std::memcmp(whole.data(), from_f32.data(), whole.size() * sizeof(float)), 0);
    // A thread's share: 16 rows, pointer at its first group, same y_stride.
    const int64_t group_bytes = num_in / kQk * int64_t(sizeof(BlockQ4_0x8));
    for (int64_t begin = 0; begin < num_out; begin += 16)
      table->matmul_for(DType::kQ4_0x8)
          .q8_0(reinterpret_cast<const uint8_t*>(w.packed.data()) + begin / 8 * group_bytes, xq.data(),
                sliced.data() + begin, 16, num_in, num_tokens, num_out);
    EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0);
    // One token alone gives the bits it got inside the batch of eleven.
    std::vector<float> alone(static_cast<size_t>(num_out));
    table->matmul_for(DType::kQ4_0x8)
        .q8_0(w.packed.data(), xq.data() + 9 * num_in / kQk, alone.data(), num_out, num_in, 1, num_out);
    EXPECT_EQ(std::memcmp(alone.data(), whole.data() + 9 * num_out, alone.size() * sizeof(float)), 0);
  }
}

TEST(Q4_0x8Test, AgreesWithThePlainQ4_0Kernel) {
  std::mt19937 rng(5);
  const int64_t num_in = 512, num_out = 32, num_tokens = 3;
  const Weights w = make_q4_0x8_weights(rng, num_out, num_in);
  const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
  std::vector<float> y_plain(size_t(num_tokens * num_out)), y_packed(y_plain.size());
  ref::matmul_q4_0(w.plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
  ref::matmul_q4_0x8(w.packed.data(), x.data(), y_packed.data(), num_out, num_in, num_tokens);
  // Same integers and scales; only the order of the f32 sums differs.
  double worst = 0.0;
  for (size_t k = 0; k < y_plain.size(); ++k) worst = std::max(worst, double(std::fabs(y_plain[k] - y_packed[k])));
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(std::fabs(y_plain[0]), 1e-2);  // not a vacuous comparison of zeros
}

struct Weights8 {
  std::vector<BlockQ8_0> plain;     // [num_out, num_in / 32]
  std::vector<BlockQ8_0x8> packed;  // [num_out / 8, num_in / 32]
};

// Random Q8_0 weights, with some -128 (never written by a quantizer, possible in a foreign file) to test the sign
// trick's edge.
Weights8 make_q8_0x8_weights(std::mt19937& rng, int64_t num_out, int64_t num_in) {
  const std::vector<float> w = random_floats(rng, num_out * num_in, 1.0f);
  Weights8 q;
  q.plain.resize(size_t(num_out * num_in / kQk));
  quant::quantize_row_q8_0(w.data(), q.plain.data(), num_out * num_in);
  for (size_t b = 0; b < q.plain.size(); b += 7) q.plain[b].qs[b % 32] = -128;
  q.packed.resize(q.plain.size());
  quant::repack_q8_0x8(q.plain.data(), q.packed.data(), num_out, num_in / kQk);
  return q;
}

TEST(BlockQ8_0x8Test, RepackIsALosslessPermutation) {
  std::mt19937 rng(8);
  const int64_t num_out = 16, num_blocks = 3;
  const Weights8 w = make_q8_0x8_weights(rng, num_out, num_blocks * kQk);
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t b = 0; b < num_blocks; ++b) {
      const BlockQ8_0 back = quant::unpack_q8_0x8_row(w.packed[size_t((o / 8) * num_blocks + b)], o % 8);
      ASSERT_EQ(std::memcmp(&back, &w.plain[size_t(o * num_blocks + b)], sizeof(BlockQ8_0)), 0) << o << " " << b;
    }
}

TEST_P(RepackedSimdTest, Q8_0x8MatchesScalarBitForBit) {
  for (int64_t num_in : {32, 96, 2048}) {
    for (int64_t num_out : {8, 24, 120}) {
      for (int64_t num_tokens : {1, 3, 4, 7, 8, 11}) {
        const Weights8 w = make_q8_0x8_weights(rng_, num_out, num_in);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
        ref::matmul_q8_0x8(w.packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kQ8_0x8).f32(w.packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
            << "num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens;
        // Slices of 16 rows and a token alone give the same bits.
        const std::vector<BlockQ8_0> xq = quantize_tokens(x, num_in);
        std::vector<float> sliced(y_ref.size(), -1.0f);
        const int64_t group_bytes = num_in / kQk * int64_t(sizeof(BlockQ8_0x8));
        for (int64_t begin = 0; begin < num_out; begin += 16)
          simd_->matmul_for(DType::kQ8_0x8)
              .q8_0(reinterpret_cast<const uint8_t*>(w.packed.data()) + begin / 8 * group_bytes, xq.data(),
                    sliced.data() + begin, std::min<int64_t>(16, num_out - begin), num_in, num_tokens, num_out);
        ASSERT_EQ(std::memcmp(y_ref.data(), sliced.data(), y_ref.size() * sizeof(float)), 0);
        std::vector<float> last(static_cast<size_t>(num_out));
        simd_->matmul_for(DType::kQ8_0x8)
            .q8_0(w.packed.data(), xq.data() + (num_tokens - 1) * num_in / kQk, last.data(), num_out, num_in, 1,
                  num_out);
        ASSERT_EQ(std::memcmp(last.data(), y_ref.data() + (num_tokens - 1) * num_out, last.size() * sizeof(float)), 0);
      }
    }
  }
}

TEST(Q8_0x8Test, AgreesWithThePlainQ8_0Kernel) {
  std::mt19937 rng(6);
  const int64_t num_in = 512, num_out = 32, num_tokens = 3;
  const Weights8 w = make_q8_0x8_weights(rng, num_out, num_in);
  const std::vector<float> x = random_floats(rng, num_tokens * num_in, 2.0f);
  std::vector<float> y_plain(size_t(num_tokens * num_out)), y_packed(y_plain.size());
  ref::matmul_q8_0(w.plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
  ref::matmul_q8_0x8(w.packed.data(), x.data(), y_packed.data(), num_out, num_in, num_tokens);
  double worst = 0.0;
  for (size_t k = 0; k < y_plain.size(); ++k) worst = std::max(worst, double(std::fabs(y_plain[k] - y_packed[k])));
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(std::fabs(y_plain[0]), 1e-2);
}

TEST_P(RepackedSimdTest, Q8_0x8ExtremeValuesStayExact) {
  // Weights of -128 and 127 against activations of +-127: the largest pairs the sign trick forms.
  const int64_t num_in = 256, num_out = 16, num_tokens = 3;
  std::vector<BlockQ8_0> plain(size_t(num_out * num_in / kQk));
  for (size_t b = 0; b < plain.size(); ++b) {
    plain[b].d = 0x3c00;  // 1.0
    for (int j = 0; j < 32; ++j) plain[b].qs[j] = int8_t((b + size_t(j)) % 3 ? -128 : 127);
  }
  std::vector<BlockQ8_0x8> packed(plain.size());
  quant::repack_q8_0x8(plain.data(), packed.data(), num_out, num_in / kQk);
  std::vector<float> x(size_t(num_tokens * num_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 3) % 2 ? 127.0f : -127.0f;
  std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size()), y_plain(y_ref.size());
  ref::matmul_q8_0x8(packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
  simd_->matmul_for(DType::kQ8_0x8).f32(packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
  ref::matmul_q8_0(plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
  for (size_t k = 0; k < y_ref.size(); ++k) {
    ASSERT_EQ(y_simd[k], y_ref[k]) << k;
    ASSERT_EQ(y_ref[k], y_plain[k]) << k;  // integer-valued sums of 8 exact blocks: no rounding at all
  }
}

// AWQ INT4 of every group size, repacked: AVX2 == scalar bit for bit, and both near the plain AWQ kernel.
TEST_P(RepackedSimdTest, AwqInt4x8MatchesScalarAndThePlainKernel) {
  for (int64_t group : {32, 64, 128}) {
    for (int64_t num_in : {128, 512}) {
      for (int64_t num_tokens : {1, 3, 4, 6, 8, 13}) {
        const int64_t num_out = 24;
        const std::vector<float> wf = random_floats(rng_, num_out * num_in, 1.0f);
        const int64_t row_bytes = quant::awq_int4_row_bytes(num_in, group);
        std::vector<uint8_t> plain(size_t(num_out * row_bytes));
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_awq_int4(wf.data() + o * num_in, plain.data() + o * row_bytes, num_in, group);
        std::vector<quant::BlockAwqInt4x8> packed(size_t(num_out / 8 * num_in / kQk));
        quant::repack_awq_int4x8(plain.data(), packed.data(), num_out, num_in, group);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 2.0f);
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN), y_plain(y_ref.size());
        ref::matmul_awq_int4x8(packed.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kAwqInt4x8).f32(packed.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
            << "group " << group << " num_in " << num_in << " tokens " << num_tokens;
        const MatmulFn plain_kernel = group == 32   ? ref::matmul_awq_int4_g32
                                      : group == 64 ? ref::matmul_awq_int4_g64
                                                    : ref::matmul_awq_int4_g128;
        plain_kernel(plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
        for (size_t k = 0; k < y_ref.size(); ++k) ASSERT_NEAR(y_ref[k], y_plain[k], 1e-3) << group << " " << k;
      }
    }
  }
}

// INT8x8 keeps the plain W8A8 arithmetic (an exact int32 sum, one scale per row and token), so both tables give
// the plain kernel's bits on the plain rows, for any split of rows and tokens.
TEST_P(RepackedSimdTest, Int8x8GivesThePlainInt8KernelsBits) {
  for (int64_t num_in : {4, 36, 200, 2048}) {
    for (int64_t num_out : {8, 24, 64}) {
      for (int64_t num_tokens : {1, 2, 4, 5, 8, 10}) {
        const std::vector<float> wf = random_floats(rng_, num_out * num_in, 1.0f);
        const int64_t row_bytes = quant::int8_row_bytes(num_in);
        std::vector<uint8_t> plain(size_t(num_out * row_bytes)), packed(plain.size());
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_int8(wf.data() + o * num_in, plain.data() + o * row_bytes, num_in);
        quant::repack_int8x8(plain.data(), packed.data(), num_out, num_in);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
        std::vector<float> y_plain(size_t(num_tokens * num_out));
        ref::matmul_int8(plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
        for (const KernelTable* table : {simd_, kernels_for(Isa::kScalar)}) {
          std::vector<float> y(y_plain.size(), NAN);
          table->matmul_for(DType::kInt8x8).f32(packed.data(), x.data(), y.data(), num_out, num_in, num_tokens);
          ASSERT_EQ(std::memcmp(y.data(), y_plain.data(), y.size() * sizeof(float)), 0)
              << isa_name(table->isa) << " num_in " << num_in << " num_out " << num_out << " tokens " << num_tokens;
        }
        // Row slices of 8 with the pre-quantized entry point.
        std::vector<int8_t> xq(x.size());
        std::vector<float> xs(static_cast<size_t>(num_tokens));
        for (int64_t t = 0; t < num_tokens; ++t)
          xs[size_t(t)] = quant::quantize_int8_values(x.data() + t * num_in, xq.data() + t * num_in, num_in);
        std::vector<float> sliced(y_plain.size(), NAN);
        for (int64_t begin = 0; begin < num_out; begin += 8)
          simd_->matmul_for(DType::kInt8x8)
              .int8(packed.data() + begin * row_bytes, xq.data(), xs.data(), sliced.data() + begin, 8, num_in,
                    num_tokens, num_out);
        ASSERT_EQ(std::memcmp(sliced.data(), y_plain.data(), sliced.size() * sizeof(float)), 0);
      }
    }
  }
}

TEST(Block16RowsTest, RepacksAreLosslessPermutations) {
  std::mt19937 rng(9);
  const int64_t num_out = 32, num_blocks = 3;
  const Weights w = make_q4_0x8_weights(rng, num_out, num_blocks * kQk);
  std::vector<quant::BlockQ4_0x16> q4(w.plain.size() / 16);
  quant::repack_q4_0x16(w.plain.data(), q4.data(), num_out, num_blocks);
  const Weights8 w8 = make_q8_0x8_weights(rng, num_out, num_blocks * kQk);
  std::vector<quant::BlockQ8_0x16> q8(w8.plain.size() / 16);
  quant::repack_q8_0x16(w8.plain.data(), q8.data(), num_out, num_blocks);
  for (int64_t o = 0; o < num_out; ++o) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      const BlockQ4_0 back4 = quant::unpack_q4_0x16_row(q4[size_t((o / 16) * num_blocks + b)], o % 16);
      ASSERT_EQ(std::memcmp(&back4, &w.plain[size_t(o * num_blocks + b)], sizeof(BlockQ4_0)), 0) << o << " " << b;
      const BlockQ8_0 back8 = quant::unpack_q8_0x16_row(q8[size_t((o / 16) * num_blocks + b)], o % 16);
      ASSERT_EQ(std::memcmp(&back8, &w8.plain[size_t(o * num_blocks + b)], sizeof(BlockQ8_0)), 0) << o << " " << b;
    }
  }
}

// The 16-row layouts hold the same integers and scales as the 8-row ones, and their kernels do the same arithmetic
// per row, so every level's x16 kernel gives the x8 scalar reference's bits: both entry points, row slices of 16 (a
// thread's share), and a token alone.
TEST_P(RepackedSimdTest, SixteenRowLayoutsGiveTheEightRowReferenceBits) {
  for (int64_t group : {0, 32, 128}) {  // 0: Q4_0 and Q8_0; else AWQ INT4 with that group
    for (int64_t num_in : {128, 2048}) {
      for (int64_t num_out : {16, 48, 160}) {
        for (int64_t num_tokens : {1, 2, 5, 8, 13}) {
          const std::vector<float> wf = random_floats(rng_, num_out * num_in, 1.0f);
          const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
          const std::vector<BlockQ8_0> xq = quantize_tokens(x, num_in);
          struct Case {
            DType x8, x16;
            std::vector<uint8_t> packed8, packed16;
          };
          std::vector<Case> cases;
          if (group == 0) {
            std::vector<BlockQ4_0> q4(size_t(num_out * num_in / kQk));
            quant::quantize_row_q4_0(wf.data(), q4.data(), num_out * num_in);
            Case c4{DType::kQ4_0x8, DType::kQ4_0x16, std::vector<uint8_t>(q4.size() * sizeof(BlockQ4_0)),
                    std::vector<uint8_t>(q4.size() * sizeof(BlockQ4_0))};
            quant::repack_q4_0x8(q4.data(), reinterpret_cast<BlockQ4_0x8*>(c4.packed8.data()), num_out, num_in / kQk);
            quant::repack_q4_0x16(q4.data(), reinterpret_cast<quant::BlockQ4_0x16*>(c4.packed16.data()), num_out,
                                  num_in / kQk);
            cases.push_back(std::move(c4));
            std::vector<BlockQ8_0> q8(size_t(num_out * num_in / kQk));
            quant::quantize_row_q8_0(wf.data(), q8.data(), num_out * num_in);
            for (size_t b = 0; b < q8.size(); b += 5) q8[b].qs[b % 32] = -128;  // a foreign file's extreme
            Case c8{DType::kQ8_0x8, DType::kQ8_0x16, std::vector<uint8_t>(q8.size() * sizeof(BlockQ8_0)),
                    std::vector<uint8_t>(q8.size() * sizeof(BlockQ8_0))};
            quant::repack_q8_0x8(q8.data(), reinterpret_cast<BlockQ8_0x8*>(c8.packed8.data()), num_out, num_in / kQk);
            quant::repack_q8_0x16(q8.data(), reinterpret_cast<quant::BlockQ8_0x16*>(c8.packed16.data()), num_out,
                                  num_in / kQk);
            cases.push_back(std::move(c8));
          } else {
            const int64_t row_bytes = quant::awq_int4_row_bytes(num_in, group);
            std::vector<uint8_t> plain(size_t(num_out * row_bytes));
            for (int64_t o = 0; o < num_out; ++o)
              quant::quantize_row_awq_int4(wf.data() + o * num_in, plain.data() + o * row_bytes, num_in, group);
            Case c{DType::kAwqInt4x8, DType::kAwqInt4x16,
                   std::vector<uint8_t>(size_t(num_out / 8 * num_in / kQk) * sizeof(quant::BlockAwqInt4x8)),
                   std::vector<uint8_t>(size_t(num_out / 16 * num_in / kQk) * sizeof(quant::BlockAwqInt4x16))};
            quant::repack_awq_int4x8(plain.data(), reinterpret_cast<quant::BlockAwqInt4x8*>(c.packed8.data()), num_out,
                                     num_in, group);
            quant::repack_awq_int4x16(plain.data(), reinterpret_cast<quant::BlockAwqInt4x16*>(c.packed16.data()),
                                      num_out, num_in, group);
            cases.push_back(std::move(c));
          }
          for (const Case& c : cases) {
            SCOPED_TRACE(testing::Message() << dtype_name(c.x16) << " group " << group << " num_in " << num_in
                                            << " num_out " << num_out << " tokens " << num_tokens);
            const KernelTable& scalar = *kernels_for(Isa::kScalar);
            std::vector<float> y_ref(size_t(num_tokens * num_out)), y(y_ref.size(), NAN), y_xq(y_ref.size(), NAN);
            scalar.matmul_for(c.x8).f32(c.packed8.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
            simd_->matmul_for(c.x16).f32(c.packed16.data(), x.data(), y.data(), num_out, num_in, num_tokens);
            ASSERT_EQ(std::memcmp(y_ref.data(), y.data(), y.size() * sizeof(float)), 0);
            const int64_t group_bytes = int64_t(c.packed16.size()) / (num_out / 16);
            for (int64_t begin = 0; begin < num_out; begin += 16)
              simd_->matmul_for(c.x16).q8_0(c.packed16.data() + begin / 16 * group_bytes, xq.data(),
                                            y_xq.data() + begin, 16, num_in, num_tokens, num_out);
            ASSERT_EQ(std::memcmp(y_ref.data(), y_xq.data(), y.size() * sizeof(float)), 0);
            std::vector<float> last(static_cast<size_t>(num_out));
            simd_->matmul_for(c.x16).q8_0(c.packed16.data(), xq.data() + (num_tokens - 1) * num_in / kQk, last.data(),
                                          num_out, num_in, 1, num_out);
            ASSERT_EQ(std::memcmp(last.data(), y_ref.data() + (num_tokens - 1) * num_out, last.size() * sizeof(float)),
                      0);
          }
        }
      }
    }
  }
}

// INT8x16 holds the INT8x8 bytes regrouped, so every level's INT8x16 kernels give the plain INT8 reference's bits:
// both entry points, row slices of 16, a token alone (16 tokens and more: the amx level's tile path).
TEST_P(RepackedSimdTest, Int8x16GivesThePlainInt8KernelsBits) {
  for (int64_t num_in : {4, 36, 2048}) {
    for (int64_t num_out : {16, 48}) {
      for (int64_t num_tokens : {1, 2, 5, 8, 13, 16, 37}) {
        SCOPED_TRACE(testing::Message() << "num_in " << num_in << " num_out " << num_out << " tokens " << num_tokens);
        const std::vector<float> wf = random_floats(rng_, num_out * num_in, 1.0f);
        const int64_t row_bytes = quant::int8_row_bytes(num_in);
        std::vector<uint8_t> plain(size_t(num_out * row_bytes)), packed(plain.size());
        for (int64_t o = 0; o < num_out; ++o)
          quant::quantize_row_int8(wf.data() + o * num_in, plain.data() + o * row_bytes, num_in);
        for (size_t i = 0; i < plain.size(); i += 97) plain[i] = i % row_bytes >= 4 ? 0x80 : plain[i];  // some -128
        quant::repack_int8x16(plain.data(), packed.data(), num_out, num_in);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 3.0f);
        std::vector<float> y_plain(size_t(num_tokens * num_out)), y(y_plain.size(), NAN), sliced(y.size(), NAN);
        ref::matmul_int8(plain.data(), x.data(), y_plain.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kInt8x16).f32(packed.data(), x.data(), y.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y.data(), y_plain.data(), y.size() * sizeof(float)), 0);
        std::vector<int8_t> xq(x.size());
        std::vector<float> xs(static_cast<size_t>(num_tokens));
        for (int64_t t = 0; t < num_tokens; ++t)
          xs[size_t(t)] = quant::quantize_int8_values(x.data() + t * num_in, xq.data() + t * num_in, num_in);
        for (int64_t begin = 0; begin < num_out; begin += 16)
          simd_->matmul_for(DType::kInt8x16)
              .int8(packed.data() + begin * row_bytes, xq.data(), xs.data(), sliced.data() + begin, 16, num_in,
                    num_tokens, num_out);
        ASSERT_EQ(std::memcmp(sliced.data(), y_plain.data(), sliced.size() * sizeof(float)), 0);
        std::vector<float> last(static_cast<size_t>(num_out));
        simd_->matmul_for(DType::kInt8x16)
            .int8(packed.data(), xq.data() + (num_tokens - 1) * num_in, xs.data() + num_tokens - 1, last.data(),
                  num_out, num_in, 1, num_out);
        ASSERT_EQ(std::memcmp(last.data(), y_plain.data() + (num_tokens - 1) * num_out, last.size() * sizeof(float)),
                  0);
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
