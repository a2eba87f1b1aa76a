// rope and softmax (kernels.h): each scalar reference against its definition in double, and every SIMD level's
// kernel against the scalar one: RoPE bit for bit (adjacent pairs and neox halves, partial rotary, in place and not,
// head sizes 8/64/80/128 and odd pair counts for the tails), softmax within a few ulp over row lengths around the
// vector widths, in place and not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "support/kernel_test_values.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

using namespace testing_support;  // support/kernel_test_values.h

struct RopeShape {
  int32_t num_heads, head_dim, half_rope;
};
// Full rotary at the model head sizes, partial rotary (phi-style 32 of 80, a quarter of 128), pair counts that
// leave tails after 4- and 8-pair vectors, and heads that divide a vector (several heads a vector, heads left over).
const RopeShape kRopeShapes[] = {{1, 8, 4},   {3, 8, 4},   {8, 8, 4},    {5, 4, 2},    {4, 16, 8}, {2, 64, 32},
                                 {4, 80, 40}, {2, 80, 16}, {2, 128, 64}, {1, 128, 16}, {3, 14, 7}, {2, 26, 13},
                                 {1, 2, 1},   {3, 2, 1},   {2, 10, 3},   {1, 6, 0}};

TEST(RopeTest, ScalarRotatesEachPairByItsAngle) {
  std::mt19937 rng(31);
  for (const RopeShape& s : kRopeShapes) {
    for (bool neox : {false, true}) {
      const size_t n = size_t(s.num_heads) * size_t(s.head_dim);
      const std::vector<float> x = random_floats(rng, n, 4.0f);
      std::vector<float> angle = random_floats(rng, size_t(s.half_rope), 3.1f), cs, sn;
      for (float a : angle) cs.push_back(std::cos(a)), sn.push_back(std::sin(a));
      std::vector<float> y(n, NAN);
      ref::rope(x.data(), y.data(), s.num_heads, s.head_dim, s.half_rope, cs.data(), sn.data(), neox);
      for (int32_t h = 0; h < s.num_heads; ++h) {
        const size_t base = size_t(h) * size_t(s.head_dim);
        for (int32_t i = 0; i < s.half_rope; ++i) {
          const size_t ia = base + size_t(neox ? i : 2 * i), ib = ia + size_t(neox ? s.half_rope : 1);
          const double a = x[ia], b = x[ib], c = cs[size_t(i)], si = sn[size_t(i)];
          EXPECT_NEAR(y[ia], a * c - b * si, 1e-5) << "head_dim " << s.head_dim << " pair " << i;
          EXPECT_NEAR(y[ib], a * si + b * c, 1e-5) << "head_dim " << s.head_dim << " pair " << i;
        }
        for (int32_t i = 2 * s.half_rope; i < s.head_dim; ++i) EXPECT_EQ(y[base + size_t(i)], x[base + size_t(i)]);
      }
    }
  }
}

class RopeLevelTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(RopeLevelTest);

TEST_P(RopeLevelTest, SimdGivesTheScalarBits) {
  std::mt19937 rng(37);
  for (const RopeShape& s : kRopeShapes) {
    for (bool neox : {false, true}) {
      for (bool in_place : {false, true}) {
        const size_t n = size_t(s.num_heads) * size_t(s.head_dim);
        const std::vector<float> x = random_floats(rng, n, 4.0f);
        std::vector<float> angle = random_floats(rng, size_t(s.half_rope), 3.1f), cs, sn;
        for (float a : angle) cs.push_back(std::cos(a)), sn.push_back(std::sin(a));
        std::vector<float> want(n, NAN), got = in_place ? x : std::vector<float>(n, NAN);
        ref::rope(x.data(), want.data(), s.num_heads, s.head_dim, s.half_rope, cs.data(), sn.data(), neox);
        simd_->rope(in_place ? got.data() : x.data(), got.data(), s.num_heads, s.head_dim, s.half_rope, cs.data(),
                    sn.data(), neox);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0)
            << "heads " << s.num_heads << " head_dim " << s.head_dim << " half_rope " << s.half_rope
            << (neox ? " neox" : "") << (in_place ? " in place" : "");
      }
    }
  }
}

const int64_t kSoftmaxSizes[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 257, 1000};

TEST(SoftmaxTest, ScalarEqualsTheDefinition) {
  std::mt19937 rng(41);
  for (int64_t n : kSoftmaxSizes) {
    const std::vector<float> x = random_floats(rng, n, 20.0f);
    std::vector<float> y(size_t(n), NAN);
    ref::softmax(x.data(), y.data(), n);
    double max = x[0], sum = 0.0, total = 0.0;
    for (float v : x) max = std::max(max, double(v));
    for (float v : x) sum += std::exp(double(v) - max);
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(double(x[size_t(i)]) - max) / sum;
      ASSERT_NEAR(y[size_t(i)], want, 5e-6 * want + 1e-30) << "n " << n << " at " << i;
      total += y[size_t(i)];
    }
    EXPECT_NEAR(total, 1.0, 1e-5) << "n " << n;
  }
}

class SoftmaxLevelTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(SoftmaxLevelTest);

// Within a few ulp of the scalar kernel (the vector exp's ~2e-7); a value more than 87 below the max comes out as a
// denormal-sized ~1e-38 rather than the reference's, hence the absolute floor.
TEST_P(SoftmaxLevelTest, SimdEqualsScalar) {
  std::mt19937 rng(43);
  for (int64_t n : kSoftmaxSizes) {
    for (float scale : {1.0f, 30.0f, 100.0f}) {
      for (bool in_place : {false, true}) {
        const std::vector<float> x = random_floats(rng, n, scale);
        std::vector<float> want(size_t(n), NAN), got = in_place ? x : std::vector<float>(size_t(n), NAN);
        ref::softmax(x.data(), want.data(), n);
        simd_->softmax(in_place ? got.data() : x.data(), got.data(), n);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_NEAR(got[size_t(i)], want[size_t(i)], 2e-6f * want[size_t(i)] + 1e-30f)
              << "n " << n << " scale " << scale << " at " << i << (in_place ? " in place" : "");
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
