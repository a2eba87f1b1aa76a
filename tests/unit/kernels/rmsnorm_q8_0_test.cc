// The fused RMSNorm + Q8_0 quantization: each table's version byte for byte against that table's rmsnorm
// followed by its quantize_row_q8_0 (the unfused path the model falls back to), and AVX2 against the scalar
// reference within one quantization step, on random rows of odd block counts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_q8_0.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

using quant::BlockQ8_0;

// Block counts: one, small odd ones, and rows as wide as real models' (TinyLlama's dim is 64 blocks).
const int64_t kNumBlocks[] = {1, 3, 5, 7, 33, 65, 177};
const float kScales[] = {1e-3f, 1.0f, 40.0f};

void expect_same_bytes(const std::vector<BlockQ8_0>& a, const std::vector<BlockQ8_0>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], sizeof(BlockQ8_0)), 0) << what << ": block " << i << " of " << a.size();
}

// quantize(rmsnorm(x)) the unfused way, with one table's two kernels.
std::vector<BlockQ8_0> norm_then_quantize(const KernelTable& k, const std::vector<float>& x,
                                          const std::vector<float>& weight) {
  const int64_t n = int64_t(x.size());
  std::vector<float> normed(x.size());
  std::vector<BlockQ8_0> q(x.size() / BlockQ8_0::kNumValues);
  k.rmsnorm(x.data(), weight.data(), normed.data(), n, 1e-5f);
  k.quantize_row_q8_0(normed.data(), q.data(), n);
  return q;
}

std::vector<BlockQ8_0> fused(const KernelTable& k, const std::vector<float>& x, const std::vector<float>& weight) {
  std::vector<BlockQ8_0> q(x.size() / BlockQ8_0::kNumValues);
  k.rmsnorm_q8_0(x.data(), weight.data(), q.data(), int64_t(x.size()), 1e-5f);
  return q;
}

TEST(RmsnormQ8_0Test, EachTableEqualsItsRmsnormThenQuantize) {
  std::mt19937 rng(7);
  for (Isa isa : kAllLevels) {
    const KernelTable* k = kernels_for(isa);
    if (k == nullptr) continue;
    for (int64_t num_blocks : kNumBlocks) {
      for (float scale : kScales) {
        const int64_t n = num_blocks * BlockQ8_0::kNumValues;
        const auto x = random_floats(rng, n, scale);
        const auto weight = random_floats(rng, n, 2.0f);
        expect_same_bytes(fused(*k, x, weight), norm_then_quantize(*k, x, weight), isa_name(isa).data());
      }
    }
  }
}

TEST(RmsnormQ8_0Test, ZeroRowGivesZeroBlocks) {
  for (Isa isa : kAllLevels) {
    const KernelTable* k = kernels_for(isa);
    if (k == nullptr) continue;
    const std::vector<float> x(96, 0.0f), weight(96, 1.0f);
    for (const BlockQ8_0& b : fused(*k, x, weight)) {
      EXPECT_EQ(b.d, 0);
      for (int8_t q : b.qs) EXPECT_EQ(q, 0);
    }
  }
}

class RmsnormQ8_0SimdTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(RmsnormQ8_0SimdTest);

TEST_P(RmsnormQ8_0SimdTest, MatchesScalarWithinOneStep) {
  const KernelTable* simd = simd_;
  std::mt19937 rng(11);
  for (int64_t num_blocks : kNumBlocks) {
    for (float scale : kScales) {
      const int64_t n = num_blocks * BlockQ8_0::kNumValues;
      const auto x = random_floats(rng, n, scale);
      const auto weight = random_floats(rng, n, 2.0f);
      std::vector<BlockQ8_0> q_ref(static_cast<size_t>(num_blocks)), q_simd(static_cast<size_t>(num_blocks));
      ref::rmsnorm_q8_0(x.data(), weight.data(), q_ref.data(), n, 1e-5f);
      simd->rmsnorm_q8_0(x.data(), weight.data(), q_simd.data(), n, 1e-5f);
      // The two sum the squares in different orders, so the scales may differ in the last bits: a value can
      // round the other way (one step), and a block's fp16 scale move by one ulp.
      std::vector<float> v_ref(static_cast<size_t>(n)), v_simd(static_cast<size_t>(n));
      quant::dequantize_row_q8_0(q_ref.data(), v_ref.data(), n);
      quant::dequantize_row_q8_0(q_simd.data(), v_simd.data(), n);
      for (int64_t b = 0; b < num_blocks; ++b) {
        const float d = fp16_to_float(q_ref[size_t(b)].d);
        EXPECT_NEAR(fp16_to_float(q_simd[size_t(b)].d), d, d * 1e-3f) << "block " << b << " of " << num_blocks;
        for (int64_t j = 0; j < BlockQ8_0::kNumValues; ++j) {
          const size_t i = size_t(b * BlockQ8_0::kNumValues + j);
          ASSERT_LE(std::fabs(v_simd[i] - v_ref[i]), d * 1.01f + 1e-30f) << "value " << i << " of " << n;
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
