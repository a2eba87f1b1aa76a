// The W8A8 matmul (INT8 per-channel weights, per-token INT8 activations): the AVX2 activation quantizer byte for
// byte against quant::quantize_int8_values, the AVX2 matmul bit for bit against the scalar one (the integer dot
// is exact in both) on random shapes with odd num_in, num_out and token counts, and the scalar kernel against an
// f32 matmul over the dequantized weights within the activation-quantization bound.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/row_int8.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

struct Int8Weights {
  std::vector<uint8_t> rows;   // num_out rows of quant::int8_row_bytes(num_in)
  std::vector<float> dequant;  // f32 [num_out, num_in]
};

Int8Weights make_int8_weights(std::mt19937& rng, int64_t num_out, int64_t num_in) {
  const std::vector<float> w = random_floats(rng, num_out * num_in);
  Int8Weights q;
  q.rows.resize(size_t(num_out * quant::int8_row_bytes(num_in)));
  for (int64_t o = 0; o < num_out; ++o)
    quant::quantize_row_int8(w.data() + o * num_in, q.rows.data() + o * quant::int8_row_bytes(num_in), num_in);
  q.dequant.resize(w.size());
  quant::dequantize_rows_int8(q.rows.data(), q.dequant.data(), num_out, num_in);
  return q;
}

class MatmulInt8SimdTest : public SimdLevelTest {
 protected:
  std::mt19937 rng_{8};
};
PAGODA_TEST_EVERY_SIMD_LEVEL(MatmulInt8SimdTest);

TEST_P(MatmulInt8SimdTest, ActivationQuantizerMatchesReferenceBytes) {
  for (int64_t n : {1, 7, 31, 32, 33, 64, 172, 1000}) {
    for (float scale : {1e-30f, 1e-3f, 1.0f, 3e4f}) {
      std::vector<float> x = random_floats(rng_, n, scale);
      if (n > 20) {
        x[3] = 0.5f * x[0];               // an exact tie when x[0] is the max
        x[size_t(n - 1)] = 2.0f * scale;  // the max in the tail
      }
      std::vector<int8_t> expected(static_cast<size_t>(n)), actual(static_cast<size_t>(n), 99);
      const float d_ref = quant::quantize_int8_values(x.data(), expected.data(), n);
      const float d_simd = simd_->quantize_row_int8(x.data(), actual.data(), n);
      ASSERT_EQ(float_to_bits(d_ref), float_to_bits(d_simd)) << "n " << n << " scale " << scale;
      ASSERT_EQ(expected, actual) << "n " << n << " scale " << scale;
    }
  }
  // All zeros, and infinities (whose products are nan and become 0).
  for (float fill : {0.0f, std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(45, 1.0f);
    x[40] = fill;
    if (fill == 0.0f) std::fill(x.begin(), x.end(), 0.0f);
    std::vector<int8_t> expected(45), actual(45, 99);
    const float d_ref = quant::quantize_int8_values(x.data(), expected.data(), 45);
    const float d_simd = simd_->quantize_row_int8(x.data(), actual.data(), 45);
    EXPECT_EQ(float_to_bits(d_ref), float_to_bits(d_simd));
    EXPECT_EQ(expected, actual);
  }
}

TEST_P(MatmulInt8SimdTest, MatchesScalarBitForBit) {
  for (int64_t num_in : {1, 5, 32, 64, 100, 172, 2048}) {
    for (int64_t num_out : {1, 3, 7, 13}) {
      for (int64_t num_tokens = 1; num_tokens <= 9; ++num_tokens) {
        const Int8Weights w = make_int8_weights(rng_, num_out, num_in);
        const std::vector<float> x = random_floats(rng_, num_tokens * num_in, 2.0f);
        std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
        ref::matmul_int8(w.rows.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
        simd_->matmul_for(DType::kInt8).f32(w.rows.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
        ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0)
            << "num_in " << num_in << " num_out " << num_out << " num_tokens " << num_tokens;
      }
    }
  }
}

TEST_P(MatmulInt8SimdTest, SpansSeveralOutputTiles) {
  const int64_t num_in = 2051, num_out = 301;  // 2055-byte rows: 63 rows per 128 KiB tile
  for (int64_t num_tokens : {1, 6}) {
    const Int8Weights w = make_int8_weights(rng_, num_out, num_in);
    const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
    std::vector<float> y_ref(size_t(num_tokens * num_out)), y_simd(y_ref.size(), NAN);
    ref::matmul_int8(w.rows.data(), x.data(), y_ref.data(), num_out, num_in, num_tokens);
    simd_->matmul_for(DType::kInt8).f32(w.rows.data(), x.data(), y_simd.data(), num_out, num_in, num_tokens);
    ASSERT_EQ(std::memcmp(y_ref.data(), y_simd.data(), y_ref.size() * sizeof(float)), 0) << num_tokens;
  }
}

TEST_P(MatmulInt8SimdTest, PrequantizedEntryPointAndRowSlicesGiveTheSameBits) {
  const int64_t num_in = 172, num_out = 11, num_tokens = 7;
  const std::vector<float> x = random_floats(rng_, num_tokens * num_in);
  std::vector<int8_t> xq(size_t(num_tokens * num_in));
  std::vector<float> x_scales(static_cast<size_t>(num_tokens));
  for (int64_t t = 0; t < num_tokens; ++t)
    x_scales[size_t(t)] = simd_->quantize_row_int8(x.data() + t * num_in, xq.data() + t * num_in, num_in);
  const Int8Weights w = make_int8_weights(rng_, num_out, num_in);
  std::vector<float> y(size_t(num_tokens * num_out));
  simd_->matmul_for(DType::kInt8).f32(w.rows.data(), x.data(), y.data(), num_out, num_in, num_tokens);
  for (const KernelTable* table : {simd_, kernels_for(Isa::kScalar)}) {
    std::vector<float> sliced(y.size(), -1.0f);
    for (int64_t begin = 0; begin < num_out; begin += 4) {
      const int64_t rows = std::min<int64_t>(4, num_out - begin);
      table->matmul_for(DType::kInt8)
          .int8(w.rows.data() + begin * quant::int8_row_bytes(num_in), xq.data(), x_scales.data(),
                sliced.data() + begin, rows, num_in, num_tokens, num_out);
    }
    EXPECT_EQ(std::memcmp(y.data(), sliced.data(), y.size() * sizeof(float)), 0) << isa_name(table->isa);
  }
}

// y_q = sum_i w'_i x'_i up to f32 rounding (w', x' what the integers and scales stand for), and the f32 matmul
// over w' gives sum_i w'_i x_i, where |x'_i - x_i| <= d_x / 2 with d_x = max|x| / 127 of the token. So
// |y_q - y_f| <= sum_i |w'_i| d_x / 2 (+ rounding).
TEST(MatmulInt8Test, ScalarMatchesF32OverDequantizedWeights) {
  std::mt19937 rng(99);
  for (int64_t num_in : {3, 64, 172, 2048}) {
    const int64_t num_out = 5, num_tokens = 3;
    const Int8Weights w = make_int8_weights(rng, num_out, num_in);
    const std::vector<float> x = random_floats(rng, num_tokens * num_in, 4.0f);
    std::vector<float> y_q(size_t(num_tokens * num_out)), y_f(y_q.size());
    ref::matmul_int8(w.rows.data(), x.data(), y_q.data(), num_out, num_in, num_tokens);
    ref::matmul_f32(w.dequant.data(), x.data(), y_f.data(), num_out, num_in, num_tokens);
    for (int64_t t = 0; t < num_tokens; ++t) {
      float amax = 0.0f;
      for (int64_t i = 0; i < num_in; ++i) amax = std::max(amax, std::fabs(x[size_t(t * num_in + i)]));
      for (int64_t o = 0; o < num_out; ++o) {
        double abs_w = 0.0, abs_wx = 0.0;
        for (int64_t i = 0; i < num_in; ++i) {
          abs_w += std::fabs(w.dequant[size_t(o * num_in + i)]);
          abs_wx += std::fabs(double(w.dequant[size_t(o * num_in + i)]) * x[size_t(t * num_in + i)]);
        }
        const double bound = abs_w * (amax / 127.0) / 2.0 * 1.0001 + 1e-5 * abs_wx;
        EXPECT_LE(std::fabs(double(y_q[size_t(t * num_out + o)]) - y_f[size_t(t * num_out + o)]), bound)
            << "num_in " << num_in << " token " << t << " row " << o;
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
