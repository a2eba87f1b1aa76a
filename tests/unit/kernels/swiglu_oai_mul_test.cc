// swiglu_oai_mul (gpt-oss's clamped SwiGLU): the scalar reference against the formula in double, clamps included,
// and every SIMD level's kernel against the scalar one; slices give the whole row's bits.
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

constexpr float kAlpha = 1.702f, kLimit = 7.0f;  // gpt-oss's

double swiglu_oai(double g, double u) {
  const double x = std::min(g, double(kLimit));
  const double y = std::clamp(u, -double(kLimit), double(kLimit));
  return x / (1.0 + std::exp(-double(kAlpha) * x)) * (y + 1.0);
}

const int64_t kSwigluRowLengths[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257};

TEST(SwigluOaiMulTest, ScalarEqualsTheFormula) {
  // The gate clamps from above only, up from both sides; up + 1 keeps a gate through when up is 0.
  std::vector<float> g{0.0f, 20.0f, -20.0f, 1.0f, 2.0f}, up{1.0f, 0.0f, 1.0f, 30.0f, -30.0f};
  ref::swiglu_oai_mul(g.data(), up.data(), 5, kAlpha, kLimit);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_NEAR(g[1], swiglu_oai(7.0, 0.0), 1e-5);
  EXPECT_NEAR(g[1], 7.0 / (1.0 + std::exp(-1.702 * 7.0)), 1e-5);
  EXPECT_NEAR(g[2], swiglu_oai(-20.0, 1.0), 1e-6);
  EXPECT_NEAR(g[3], swiglu_oai(1.0, 7.0), 1e-5);
  EXPECT_NEAR(g[4], 2.0 / (1.0 + std::exp(-1.702 * 2.0)) * -6.0, 1e-5);
  std::mt19937 rng(5);
  auto gate = random_floats(rng, 1000, 12.0f);
  auto u = random_floats(rng, 1000, 12.0f);
  std::vector<float> out = gate;
  ref::swiglu_oai_mul(out.data(), u.data(), 1000, kAlpha, kLimit);
  for (size_t i = 0; i < out.size(); ++i) {
    const double want = swiglu_oai(gate[i], u[i]);
    ASSERT_NEAR(out[i], want, 1e-5 * (1.0 + std::fabs(want))) << i;
  }
}

class SwigluOaiMulLevelTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(SwigluOaiMulLevelTest);

TEST_P(SwigluOaiMulLevelTest, SimdEqualsScalar) {
  std::mt19937 rng(9);
  for (int64_t n : kSwigluRowLengths) {
    auto gate = random_floats(rng, n, 60.0f);  // past where exp(-alpha x) overflows
    auto up = random_floats(rng, n, 12.0f);
    std::vector<float> a = gate, b = gate;
    ref::swiglu_oai_mul(a.data(), up.data(), n, kAlpha, kLimit);
    simd_->swiglu_oai_mul(b.data(), up.data(), n, kAlpha, kLimit);
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(std::isfinite(b[i])) << "n " << n << " at " << i << " gate " << gate[i];
      ASSERT_NEAR(b[i], a[i], 1e-5f * (1.0f + std::fabs(a[i]))) << "n " << n << " at " << i;
    }
  }
}

TEST_P(SwigluOaiMulLevelTest, SlicesGiveTheWholeRowsBits) {
  std::mt19937 rng(13);
  for (const KernelTable* k : {kernels_for(Isa::kScalar), simd_}) {
    for (int64_t n : kSwigluRowLengths) {
      auto gate = random_floats(rng, n, 10.0f);
      auto up = random_floats(rng, n, 10.0f);
      std::vector<float> whole = gate, sliced = gate;
      k->swiglu_oai_mul(whole.data(), up.data(), n, kAlpha, kLimit);
      for (int64_t begin = 0; begin < n;) {
        const int64_t len = std::min<int64_t>(n - begin, 1 + int64_t(rng() % 13));
        k->swiglu_oai_mul(sliced.data() + begin, up.data() + begin, len, kAlpha, kLimit);
        begin += len;
      }
      ASSERT_EQ(whole, sliced) << isa_name(k->isa) << " n " << n;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
