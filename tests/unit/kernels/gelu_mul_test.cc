// gelu_mul (Gemma's GeGLU): the scalar reference against GELU's tanh-approximation formula in double, and every SIMD
// level's kernel against the scalar one, over a range wide enough that tanh saturates; slices give the whole row's
// bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

const int64_t kRowLengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257};

TEST(GeluMulTest, ScalarEqualsTheFormula) {
  std::mt19937 rng(5);
  // Known points: gelu(0) = 0, gelu(large) = x, gelu(-large) = 0, gelu(1) = 0.841192 (PyTorch's tanh GELU).
  std::vector<float> g{0.0f, 20.0f, -20.0f, 1.0f}, up{1.0f, 1.0f, 1.0f, 2.0f};
  ref::gelu_mul(g.data(), up.data(), 4);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_FLOAT_EQ(g[1], 20.0f);
  EXPECT_NEAR(g[2], 0.0f, 1e-6f);
  EXPECT_NEAR(g[3], 2.0f * 0.841192f, 1e-5f);
  auto gate = random_floats(rng, 1000, 8.0f);
  auto u = random_floats(rng, 1000, 3.0f);
  std::vector<float> out = gate;
  ref::gelu_mul(out.data(), u.data(), 1000);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], gelu_tanh(gate[i]) * u[i], 1e-5 * (1.0 + std::fabs(gelu_tanh(gate[i]) * u[i]))) << i;
}

class GeluMulLevelTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(GeluMulLevelTest);

TEST_P(GeluMulLevelTest, SimdEqualsScalar) {
  const KernelTable* simd = simd_;
  std::mt19937 rng(9);
  for (int64_t n : kRowLengths) {
    auto gate = random_floats(rng, n, 30.0f);  // past where exp(-2u) overflows or underflows
    auto up = random_floats(rng, n, 3.0f);
    std::vector<float> a = gate, b = gate;
    ref::gelu_mul(a.data(), up.data(), n);
    simd->gelu_mul(b.data(), up.data(), n);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(std::isfinite(b[i])) << "n " << n << " at " << i << " gate " << gate[i];
      ASSERT_NEAR(b[i], a[i], 1e-5f * (1.0f + std::fabs(a[i]))) << "n " << n << " at " << i;
    }
  }
}

TEST_P(GeluMulLevelTest, SlicesGiveTheWholeRowsBits) {
  std::mt19937 rng(13);
  for (const KernelTable* k : {kernels_for(Isa::kScalar), simd_}) {
    for (int64_t n : kRowLengths) {
      auto gate = random_floats(rng, n, 10.0f);
      auto up = random_floats(rng, n, 3.0f);
      std::vector<float> whole = gate, sliced = gate;
      k->gelu_mul(whole.data(), up.data(), n);
      for (int64_t begin = 0; begin < n;) {
        const int64_t len = std::min<int64_t>(n - begin, 1 + int64_t(rng() % 13));
        k->gelu_mul(sliced.data() + begin, up.data() + begin, len);
        begin += len;
      }
      EXPECT_EQ(sliced, whole) << isa_name(k->isa) << ", n = " << n;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
