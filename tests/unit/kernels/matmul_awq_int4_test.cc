// The AWQ INT4 matmuls (groups of 32, 64, 128, Q8_0 activations): AVX2 against the scalar reference on random
// shapes with token tails and several output tiles, the prequantized entry points and row slices, and the scalar
// kernel against an f32 matmul over the dequantized weights within the activation-quantization bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_awq_int4.h"
#include "quant/block_q8_0.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

using quant::BlockQ8_0;

struct AwqWeights {
  std::vector<uint8_t> blocks;  // [num_out, num_in / group] blocks
  std::vector<float> dequant;   // f32 [num_out, num_in]
};

AwqWeights make_awq_weights(std::mt19937& rng, int64_t num_out, int64_t num_in, int64_t group) {
  // Shifted so that groups are lopsided and zero points vary.
  std::vector<float> w = random_floats(rng, num_out * num_in);
  for (size_t i = 0; i < w.size(); ++i) w[i] += 0.3f * float(int64_t(i) / group % 3 - 1);
  AwqWeights q;
  q.blocks.resize(size_t(num_out * quant::awq_int4_row_bytes(num_in, group)));
  q.dequant.resize(w.size());
  quant::quantize_row_awq_int4(w.data(), q.blocks.data(), num_out * num_in, group);
  quant::dequantize_row_awq_int4(q.blocks.data(), q.dequant.data(), num_out * num_in, group);
  return q;
}

struct GroupKernels {
  int64_t group;
  DType dtype;
  MatmulFn ref;
};
const GroupKernels kGroups[] = {
    {32, DType::kAwqInt4G32, ref::matmul_awq_int4_g32},
    {64, DType::kAwqInt4G64, ref::matmul_awq_int4_g64},
    {128, DType::kAwqInt4G128, ref::matmul_awq_int4_g128},
};

class MatmulAwqInt4SimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{4};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(MatmulAwqInt4SimdTest);

TEST_P(MatmulAwqInt4SimdTest, MatchesScalarOnRandomShapes) {
  for (const GroupKernels& k : kGroups) {
    for (int64_t num_in : {128, 256, 384, 2048}) {
      for (int64_t num_out : {1, 3, 7, 13}) {
        for (int64_t num_tokens = 1; num_tokens <= 9; ++num_tokens) {
          const AwqWeights w = make_awq_weights(rng_, num_out, num_in, k.group);
          const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 2.0f);
          std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
          k.ref(w.blocks.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
          simd_->matmul_for(k.dtype).f32(w.blocks.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
          // Both sum the same exact int32 sub-block dots; only the order of the f32 sums differs.
          const std::vector<double> scale = abs_products(w.dequant, q8_0_round_trip(x), num_out, num_in, num_tokens);
          for (size_t i = 0; i < y_ref.size(); ++i)
            ASSERT_NEAR(y_simd[i], y_ref[i], 1e-5 * scale[i] + 1e-30)
                << "group " << k.group << " num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens
                << " at " << i;
        }
      }
    }
  }
}

TEST_P(MatmulAwqInt4SimdTest, SmallGroupsOnNarrowRows) {
  // Rows of one or a few sub-blocks, as in a tiny model (dim 64).
  for (int64_t num_in : {32, 64, 96, 160}) {
    for (const GroupKernels& k : kGroups) {
      if (num_in % k.group != 0) continue;
      for (int64_t num_tokens : {1, 4, 5}) {
        const AwqWeights w = make_awq_weights(rng_, 9, num_in, k.group);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
        std::vector<float> y_ref(size_t(num_tokens * 9)), y_simd(y_ref.size(), NAN);
        k.ref(w.blocks.data(), x.data(), y_ref.data(), 9, num_in, num_tokens);
        simd_->matmul_for(k.dtype).f32(w.blocks.data(), x.data(), y_simd.data(), 9, num_in, num_tokens);
        const std::vector<double> scale = abs_products(w.dequant, q8_0_round_trip(x), 9, num_in, num_tokens);
        for (size_t i = 0; i < y_ref.size(); ++i)
          ASSERT_NEAR(y_simd[i], y_ref[i], 1e-5 * scale[i] + 1e-30) << k.group << " " << num_in;
      }
    }
  }
}

TEST_P(MatmulAwqInt4SimdTest, SpansSeveralOutputTiles) {
  const int64_t num_in = 2048, num_out = 300;  // rows of 1088 to 1280 bytes: about 100 rows per tile
  for (const GroupKernels& k : kGroups) {
    for (int64_t num_tokens : {1, 6}) {
      const AwqWeights w = make_awq_weights(rng_, num_out, num_in, k.group);
      const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
      k.ref(w.blocks.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(k.dtype).f32(w.blocks.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      const std::vector<double> scale = abs_products(w.dequant, q8_0_round_trip(x), num_out, num_in, num_tokens);
      for (size_t i = 0; i < y_ref.size(); ++i) ASSERT_NEAR(y_simd[i], y_ref[i], 1e-5 * scale[i]) << k.group;
    }
  }
}

TEST_P(MatmulAwqInt4SimdTest, PrequantizedEntryPointsAndRowSlicesGiveTheSameBits) {
  const int64_t num_in = 256, num_out = 11, num_tokens = 7;
  const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
  std::vector<BlockQ8_0> xq(size_t(num_tokens * num_in / 32));
  for (int64_t t = 0; t < num_tokens; ++t)
    simd_->quantize_row_q8_0(x.data() + t * num_in, xq.data() + t * num_in / 32, num_in);
  for (const GroupKernels& k : kGroups) {
    const AwqWeights w = make_awq_weights(rng_, num_out, num_in, k.group);
    std::vector<float> y(size_t(num_tokens * num_out)), y_xq(y.size());
    simd_->matmul_for(k.dtype).f32(w.blocks.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    simd_->matmul_for(k.dtype).q8_0(w.blocks.data(), xq.data(), y_xq.data(), num_out, num_in, num_tokens, num_out);
    EXPECT_EQ(std::memcmp(y.data(), y_xq.data(), y.size() * sizeof(float)), 0) << k.group;
    for (const KernelTable* table : {simd_, kernels_for(Isa::kScalar)}) {
      std::vector<float> whole(y.size()), sliced(y.size(), -1.0f);
      table->matmul_for(k.dtype).q8_0(w.blocks.data(), xq.data(), whole.data(), num_out, num_in, num_tokens, num_out);
      const int64_t row_bytes = quant::awq_int4_row_bytes(num_in, k.group);
      for (int64_t begin = 0; begin < num_out; begin += 4) {
        const int64_t rows = std::min<int64_t>(4, num_out - begin);
        table->matmul_for(k.dtype).q8_0(w.blocks.data() + begin * row_bytes, xq.data(), sliced.data() + begin, rows,
                                        num_in, num_tokens, num_out);
      }
      EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0) << k.group;
    }
  }
}

// As for Q4_0: |y_q - y_f| <= sum_i |w'_i| |x'_i - x_i| + f32 rounding, with |x'_i - x_i| <= d_x / 2 per Q8_0
// block of the activations.
TEST(MatmulAwqInt4Test, ScalarMatchesF32OverDequantizedWeights) {
  std::mt19937 rng(99);
  for (const GroupKernels& k : kGroups) {
    for (int64_t num_in : {128, 384, 2048}) {
      const int64_t num_out = 5, num_tokens = 3;
      const AwqWeights w = make_awq_weights(rng, num_out, num_in, k.group);
      const std::vector<float> x = random_floats(rng, num_tokens * num_in, 4.0f);
      const std::vector<float> x_deq = q8_0_round_trip(x);
      std::vector<float> y_q(size_t(num_tokens * num_out)), y_f(y_q.size());
      k.ref(w.blocks.data(), x.data(), y_q.data(), num_out, num_in, num_tokens);
      ref::matmul_f32(w.dequant.data(), x.data(), y_f.data(), num_out, num_in, num_tokens);
      for (int64_t t = 0; t < num_tokens; ++t)
        for (int64_t o = 0; o < num_out; ++o) {
          double err_bound = 0.0, abs_sum = 0.0;
          for (int64_t i = 0; i < num_in; ++i) {
            const double wi = std::fabs(w.dequant[size_t(o * num_in + i)]);
            err_bound += wi * std::fabs(double(x_deq[size_t(t * num_in + i)]) - x[size_t(t * num_in + i)]);
            abs_sum += wi * (std::fabs(x[size_t(t * num_in + i)]) + std::fabs(x_deq[size_t(t * num_in + i)]));
          }
          EXPECT_LE(std::fabs(double(y_q[size_t(t * num_out + o)]) - y_f[size_t(t * num_out + o)]),
                    err_bound + 1e-5 * abs_sum)
              << "group " << k.group << " num_in " << num_in;
        }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
