// MXFP4x8's one-token products (avx512/matmul_mxfp4x8_one_token.cc at that level, the general loop at the others):
// every SIMD level gives the scalar reference's bits for one token over odd and even block counts, one group and
// many, rows sliced as a thread pool cuts them, extreme levels, scales and activations, and rows wider than the
// one-token product takes; and one token's row equals that token's row of a many-token product.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "quant/block_iq4_x8.h"
#include "quant/block_q8_0.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

// num_out rows of MXFP4 blocks repacked to MXFP4x8: random quants (or every byte `fill`), exponents 118..121 (or
// `exponents` in turn).
std::vector<uint8_t> make_weights(std::mt19937& rng, int64_t num_out, int64_t num_in, int fill = -1,
                                  const std::vector<uint8_t>& exponents = {}) {
  const int64_t num_blocks = num_in / 32;
  std::vector<quant::BlockMXFP4> plain(size_t(num_out * num_blocks));
  for (size_t b = 0; b < plain.size(); ++b) {
    plain[b].e = exponents.empty() ? uint8_t(118 + rng() % 4) : exponents[b % exponents.size()];
    for (uint8_t& q : plain[b].qs) q = fill >= 0 ? uint8_t(fill) : uint8_t(rng());
  }
  std::vector<uint8_t> packed(size_t(num_out * dtype_row_bytes(DType::kMXFP4x8, num_in)));
  quant::repack_mxfp4x8(plain.data(), reinterpret_cast<quant::BlockMXFP4x8*>(packed.data()), num_out, num_blocks);
  return packed;
}

std::vector<quant::BlockQ8_0> quantize(const std::vector<float>& x) {
  std::vector<quant::BlockQ8_0> xq(x.size() / 32);
  quant::quantize_row_q8_0(x.data(), xq.data(), int64_t(x.size()));
  return xq;
}

class Mxfp4OneTokenTest : public SimdLevelTest {
 protected:
  const MatmulKernels& scalar() const { return kernels_for(Isa::kScalar)->matmul_for(DType::kMXFP4x8); }
  const MatmulKernels& simd() const { return simd_->matmul_for(DType::kMXFP4x8); }
  std::mt19937 rng_{47};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(Mxfp4OneTokenTest);

TEST_P(Mxfp4OneTokenTest, MatchesScalarBitForBit) {
  // 1, 3, 90 (gpt-oss's 2880), 91 blocks; 8 rows (one group), 24, 360.
  for (int64_t num_in : {32, 96, 2880, 2912})
    for (int64_t num_out : {8, 24, 360}) {
      const std::vector<uint8_t> w = make_weights(rng_, num_out, num_in);
      const std::vector<float> x = random_floats(rng_, num_in, 3.0f);
      const std::vector<quant::BlockQ8_0> xq = quantize(x);
      std::vector<float> y_ref(static_cast<size_t>(num_out)), y_f32(y_ref.size(), NAN), y_q8(y_ref.size(), NAN);
      scalar().q8_0(w.data(), xq.data(), y_ref.data(), num_out, num_in, 1, num_out);
      simd().f32(w.data(), x.data(), y_f32.data(), num_out, num_in, 1);
      simd().q8_0(w.data(), xq.data(), y_q8.data(), num_out, num_in, 1, num_out);
      ASSERT_EQ(std::memcmp(y_ref.data(), y_f32.data(), y_ref.size() * sizeof(float)), 0)
          << "f32 entry, num_in " << num_in << " num_out " << num_out;
      ASSERT_EQ(std::memcmp(y_ref.data(), y_q8.data(), y_ref.size() * sizeof(float)), 0)
          << "q8_0 entry, num_in " << num_in << " num_out " << num_out;
    }
}

TEST_P(Mxfp4OneTokenTest, RowSlicesGiveTheWholeProductsBits) {
  const int64_t num_in = 2880, num_out = 2880;
  const std::vector<uint8_t> w = make_weights(rng_, num_out, num_in);
  const std::vector<quant::BlockQ8_0> xq = quantize(random_floats(rng_, num_in, 1.0f));
  std::vector<float> whole(static_cast<size_t>(num_out)), sliced(whole.size(), NAN);
  simd().q8_0(w.data(), xq.data(), whole.data(), num_out, num_in, 1, num_out);
  const int64_t row_bytes = dtype_row_bytes(DType::kMXFP4x8, num_in);
  for (int64_t begin = 0; begin < num_out; begin += 1440)  // the two halves of a two-thread split
    simd().q8_0(w.data() + begin * row_bytes, xq.data(), sliced.data() + begin, 1440, num_in, 1, num_out);
  EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0);
  std::vector<float> y_ref(whole.size());
  scalar().q8_0(w.data(), xq.data(), y_ref.data(), num_out, num_in, 1, num_out);
  EXPECT_EQ(std::memcmp(whole.data(), y_ref.data(), whole.size() * sizeof(float)), 0);
}

TEST_P(Mxfp4OneTokenTest, ExtremeLevelsScalesAndActivationsStayExact) {
  // Every quant 0x77 (+-12, the largest level) or 0x00 / 0x88 (+0 / -0) against activations of +-127, exponents 0 and
  // 1 (the subnormal scales), 2 and 130; an odd block count for the one-block tail.
  const int64_t num_in = 32 * 17, num_out = 16;
  std::vector<float> x(static_cast<size_t>(num_in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i / 5) % 3 ? 127.0f : -127.0f;
  const std::vector<quant::BlockQ8_0> xq = quantize(x);
  for (int fill : {0x77, 0x00, 0x88, 0xf7}) {
    const std::vector<uint8_t> w = make_weights(rng_, num_out, num_in, fill, {0, 1, 2, 130});
    std::vector<float> y_ref(static_cast<size_t>(num_out)), y_simd(y_ref.size(), NAN);
    scalar().q8_0(w.data(), xq.data(), y_ref.data(), num_out, num_in, 1, num_out);
    simd().q8_0(w.data(), xq.data(), y_simd.data(), num_out, num_in, 1, num_out);
    ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0) << "fill " << fill;
  }
}

TEST_P(Mxfp4OneTokenTest, WideRowsAndManyTokensAgreeWithOneToken) {
  // 1056 blocks: wider than the one-token product's bound, so the general loop runs.
  {
    const int64_t num_in = 32 * 1056, num_out = 8;
    const std::vector<uint8_t> w = make_weights(rng_, num_out, num_in);
    const std::vector<quant::BlockQ8_0> xq = quantize(random_floats(rng_, num_in, 1.0f));
    std::vector<float> y_ref(static_cast<size_t>(num_out)), y_simd(y_ref.size(), NAN);
    scalar().q8_0(w.data(), xq.data(), y_ref.data(), num_out, num_in, 1, num_out);
    simd().q8_0(w.data(), xq.data(), y_simd.data(), num_out, num_in, 1, num_out);
    EXPECT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0);
  }
  // Token 2 of three through the many-token loop, and alone through the one-token product.
  const int64_t num_in = 2880, num_out = 64, num_tokens = 3;
  const std::vector<uint8_t> w = make_weights(rng_, num_out, num_in);
  const std::vector<quant::BlockQ8_0> xq = quantize(random_floats(rng_, num_tokens * num_in, 2.0f));
  std::vector<float> batch(static_cast<size_t>(num_tokens * num_out)), alone(size_t(num_out), NAN);
  simd().q8_0(w.data(), xq.data(), batch.data(), num_out, num_in, num_tokens, num_out);
  simd().q8_0(w.data(), xq.data() + 2 * num_in / 32, alone.data(), num_out, num_in, 1, num_out);
  EXPECT_EQ(std::memcmp(alone.data(), batch.data() + 2 * num_out, alone.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace pagoda::kernels
