// The Q8_0 / Q4_0 matmuls: AVX2 against the scalar reference on random shapes with token tails and several
// output tiles, the AVX2 activation quantizer byte for byte against quant::quantize_row_q8_0, and the scalar
// kernel against an f32 matmul over the dequantized weights within the activation-quantization bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/block_q4_0.h"
#include "quant/block_q8_0.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

using quant::BlockQ4_0;
using quant::BlockQ8_0;

// Weights of one type, quantized from f32 and dequantized back, so tests can form exact f32 references.
struct QuantWeights {
  std::vector<uint8_t> blocks;  // [num_out, num_in / 32] blocks of the type
  std::vector<float> dequant;   // f32 [num_out, num_in]
};

template <class Block>
QuantWeights make_quant_weights(std::mt19937& rng, int64_t num_out, int64_t num_in) {
  std::vector<float> w = random_floats(rng, num_out * num_in);
  QuantWeights q;
  q.blocks.resize(size_t(num_out * num_in / kQk) * sizeof(Block));
  q.dequant.resize(w.size());
  auto* blocks = reinterpret_cast<Block*>(q.blocks.data());
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    quant::quantize_row_q8_0(w.data(), blocks, num_out * num_in);
    quant::dequantize_row_q8_0(blocks, q.dequant.data(), num_out * num_in);
  } else {
    quant::quantize_row_q4_0(w.data(), blocks, num_out * num_in);
    quant::dequantize_row_q4_0(blocks, q.dequant.data(), num_out * num_in);
  }
  return q;
}

// x as the kernels see it: quantized to Q8_0 per row, then dequantized.

// sum_i |a[o][i] * b[t][i]| in double: the scale that float rounding errors of a dot product are relative to.

struct WeightType {
  const char* name;
  QuantWeights (*make)(std::mt19937&, int64_t, int64_t);
  DType dtype;
  MatmulFn ref;
};
const WeightType kTypes[] = {
    {"q8_0", make_quant_weights<BlockQ8_0>, DType::kQ8_0, ref::matmul_q8_0},
    {"q4_0", make_quant_weights<BlockQ4_0>, DType::kQ4_0, ref::matmul_q4_0},
};

class QuantMatmulSimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{2024};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(QuantMatmulSimdTest);

TEST_P(QuantMatmulSimdTest, ActivationQuantizerMatchesReferenceBytes) {
  for (float scale : {1e-30f, 1e-3f, 1.0f, 127.0f, 3e4f}) {
    std::vector<float> x = random_floats(rng_, 40 * kQk, scale);
    // Odd blocks: all zeros, exact ties (d = 1), one huge value, infinities, a subnormal amax (1/d = inf).
    for (int64_t j = 0; j < kQk; ++j) x[size_t(j)] = 0.0f;
    for (int64_t j = 0; j < kQk; ++j) x[size_t(kQk + j)] = float(j - 16) + 0.5f;
    x[size_t(kQk)] = 127.0f;
    x[size_t(2 * kQk + 3)] = 6e4f;
    x[size_t(3 * kQk + 1)] = std::numeric_limits<float>::infinity();
    x[size_t(3 * kQk + 2)] = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < kQk; ++j) x[size_t(4 * kQk + j)] = j % 3 == 0 ? 1e-40f * float(j) : 0.0f;
    std::vector<BlockQ8_0> expected(40), actual(40);
    quant::quantize_row_q8_0(x.data(), expected.data(), int64_t(x.size()));
    simd_->quantize_row_q8_0(x.data(), actual.data(), int64_t(x.size()));
    for (size_t b = 0; b < expected.size(); ++b)
      ASSERT_EQ(std::memcmp(&expected[b], &actual[b], sizeof(BlockQ8_0)), 0) << "scale " << scale << " block " << b;
  }
}

TEST_P(QuantMatmulSimdTest, MatchesScalarOnRandomShapes) {
  for (const WeightType& type : kTypes) {
    for (int64_t num_in : {32, 64, 96, 160, 2048}) {
      for (int64_t num_out : {1, 3, 7, 13}) {
        for (int64_t num_tokens = 1; num_tokens <= 9; ++num_tokens) {
          const QuantWeights w = type.make(rng_, num_out, num_in);
          const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 2.0f);
          std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
          type.ref(w.blocks.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
          simd_->matmul_for(type.dtype).f32(w.blocks.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
          // Both sum the same exact int32 block dots; only the order of the f32 sums differs.
          const std::vector<double> scale = abs_products(w.dequant, q8_0_round_trip(x), num_out, num_in, num_tokens);
          for (size_t k = 0; k < y_ref.size(); ++k)
            ASSERT_NEAR(y_simd[k], y_ref[k], 1e-5 * scale[k] + 1e-30)
                << type.name << " num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens << " at "
                << k;
        }
      }
    }
  }
}

TEST_P(QuantMatmulSimdTest, SpansSeveralOutputTiles) {
  // 2048 inputs: a Q4_0 row is 1152 bytes and a Q8_0 row 2176, so 300 rows cross 128 KiB tile boundaries.
  const int64_t num_in = 2048, num_out = 300;
  for (const WeightType& type : kTypes) {
    for (int64_t num_tokens : {1, 6}) {
      const QuantWeights w = type.make(rng_, num_out, num_in);
      const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
      std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
      type.ref(w.blocks.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
      simd_->matmul_for(type.dtype).f32(w.blocks.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
      const std::vector<double> scale = abs_products(w.dequant, q8_0_round_trip(x), num_out, num_in, num_tokens);
      for (size_t k = 0; k < y_ref.size(); ++k)
        ASSERT_NEAR(y_simd[k], y_ref[k], 1e-5 * scale[k]) << type.name << " at " << k;
    }
  }
}

TEST_P(QuantMatmulSimdTest, PrequantizedEntryPointsGiveTheSameBits) {
  const int64_t num_in = 160, num_out = 11, num_tokens = 7;
  const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
  std::vector<BlockQ8_0> xq(size_t(num_tokens * num_in / kQk));
  for (int64_t t = 0; t < num_tokens; ++t)
    simd_->quantize_row_q8_0(x.data() + t * num_in, xq.data() + t * num_in / kQk, num_in);
  for (const WeightType& type : kTypes) {
    const QuantWeights w = type.make(rng_, num_out, num_in);
    std::vector<float> y(size_t(num_tokens * num_out)), y_xq(y.size());
    simd_->matmul_for(type.dtype).f32(w.blocks.data(), x.data(), y.data(), num_out, num_in, num_tokens);
    simd_->matmul_for(type.dtype).q8_0(w.blocks.data(), xq.data(), y_xq.data(), num_out, num_in, num_tokens, num_out);
    EXPECT_EQ(std::memcmp(y.data(), y_xq.data(), y.size() * sizeof(float)), 0) << type.name;
    // Row slices with y_stride = num_out (how a thread pool splits the rows of a small batch): the same bits,
    // with either kernel table.
    for (const KernelTable* table : {simd_, kernels_for(Isa::kScalar)}) {
      std::vector<float> whole(y.size()), sliced(y.size(), -1.0f);
      table->matmul_for(type.dtype)
          .q8_0(w.blocks.data(), xq.data(), whole.data(), num_out, num_in, num_tokens, num_out);
      const int64_t row_bytes = int64_t(w.blocks.size() * sizeof(w.blocks[0])) / num_out;
      for (int64_t begin = 0; begin < num_out; begin += 4) {
        const int64_t rows = std::min<int64_t>(4, num_out - begin);
        table->matmul_for(type.dtype)
            .q8_0(reinterpret_cast<const uint8_t*>(w.blocks.data()) + begin * row_bytes, xq.data(),
                  sliced.data() + begin, rows, num_in, num_tokens, num_out);
      }
      EXPECT_EQ(std::memcmp(whole.data(), sliced.data(), whole.size() * sizeof(float)), 0) << type.name;
    }
  }
}

// y_q = sum_i w'_i x'_i exactly up to f32 rounding (w' = q_w d_w and x' = q_x d_x are what the integers and
// scales stand for), and the f32 matmul over w' gives sum_i w'_i x_i. So
//   |y_q - y_f| <= sum_i |w'_i| |x'_i - x_i| + (rounding, <= 1e-5 sum_i |w'_i| (|x_i| + |x'_i|)),
// where |x'_i - x_i| is the Q8_0 activation error bounded in block_q8_0_test.cc.
TEST(QuantMatmulTest, ScalarMatchesF32OverDequantizedWeights) {
  std::mt19937 rng(99);
  for (const WeightType& type : kTypes) {
    for (int64_t num_in : {32, 96, 2048}) {
      const int64_t num_out = 5, num_tokens = 3;
      const QuantWeights w = type.make(rng, num_out, num_in);
      const std::vector<float> x = random_floats(rng, num_tokens * num_in, 4.0f);
      const std::vector<float> x_deq = q8_0_round_trip(x);
      std::vector<float> y_q(size_t(num_tokens * num_out)), y_f(y_q.size());
      type.ref(w.blocks.data(), x.data(), y_q.data(), num_out, num_in, num_tokens);
      ref::matmul_f32(w.dequant.data(), x.data(), y_f.data(), num_out, num_in, num_tokens);
      std::vector<float> x_err(x.size());
      for (size_t k = 0; k < x.size(); ++k) x_err[k] = x_deq[k] - x[k];
      const std::vector<double> act_bound = abs_products(w.dequant, x_err, num_out, num_in, num_tokens);
      const std::vector<double> mag = abs_products(w.dequant, x, num_out, num_in, num_tokens);
      for (size_t k = 0; k < y_q.size(); ++k) {
        const double err = std::fabs(double(y_q[k]) - double(y_f[k]));
        ASSERT_LE(err, act_bound[k] + 2e-5 * mag[k]) << type.name << " num_in " << num_in << " at " << k;
        // Q8_0 activations are a ~0.4% perturbation: far below the size of the dot product's terms.
        ASSERT_LE(err, 0.01 * mag[k]) << type.name << " num_in " << num_in << " at " << k;
      }
    }
  }
}

TEST(QuantMatmulTest, HandComputedProducts) {
  // Activations with amax 127 quantize with d = 1 exactly, so every product below is an exact integer.
  std::vector<float> x(kQk, 0.0f);
  x[0] = 127.0f;
  x[5] = -3.0f;
  x[31] = 2.0f;
  BlockQ8_0 w8{};
  w8.d = 0x3c00;  // 1.0; element j is j - 16
  for (int j = 0; j < 32; ++j) w8.qs[j] = int8_t(j - 16);
  BlockQ4_0 w4{};
  w4.d = 0x4000;  // 2.0; element j < 16 is (j - 8) * 2, element 16 + j is (7 - j) * 2
  for (int j = 0; j < 16; ++j) w4.qs[j] = uint8_t(j | ((15 - j) << 4));
  for (Isa isa : kAllLevels) {
    const KernelTable* table = kernels_for(isa);
    if (table == nullptr) continue;
    float y = 0.0f;
    table->matmul_for(DType::kQ8_0).f32(&w8, x.data(), &y, 1, kQk, 1);
    EXPECT_EQ(y, -16.0f * 127 + -11.0f * -3 + 15.0f * 2) << isa_name(isa);
    table->matmul_for(DType::kQ4_0).f32(&w4, x.data(), &y, 1, kQk, 1);
    EXPECT_EQ(y, -16.0f * 127 + -6.0f * -3 + -16.0f * 2) << isa_name(isa);
  }
}

TEST_P(QuantMatmulSimdTest, Minus128WeightsDoNotSaturate) {
  // ggml never writes -128, but a GGUF file may hold it; maddubs sees |w| = 128 as unsigned and must not clip.
  const int64_t num_in = 64, num_out = 3, num_tokens = 5;
  std::vector<BlockQ8_0> w(size_t(num_out * num_in / kQk));
  for (BlockQ8_0& b : w) {
    b.d = 0x3c00;
    for (int8_t& q : b.qs) q = -128;
  }
  std::vector<float> x = random_floats(rng_, num_tokens * num_in);
  for (int64_t t = 0; t < num_tokens; ++t) x[size_t(t * num_in)] = 127.0f;  // d_x = 1: large integer sums
  for (int64_t t = 0; t < num_tokens; ++t) x[size_t(t * num_in + 1)] = 127.0f;
  std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size());
  ref::matmul_q8_0(w.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
  simd_->matmul_for(DType::kQ8_0).f32(w.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
  for (size_t k = 0; k < y_ref.size(); ++k) ASSERT_NEAR(y_simd[k], y_ref[k], 1e-5f * std::fabs(y_ref[k])) << k;
}

TEST(QuantMatmulDeathTest, RowsMustBeWholeBlocks) {
  std::vector<uint8_t> w(64);
  std::vector<float> x(48), y(1);
  EXPECT_DEATH(ref::matmul_q4_0(w.data(), x.data(), y.data(), 1, 48, 1), "whole 32-value blocks");
}

}  // namespace
}  // namespace pagoda::kernels
