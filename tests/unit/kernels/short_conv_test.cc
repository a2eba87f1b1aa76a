// short_conv (LFM2's short causal convolution): the scalar reference against the convolution written out in double
// over the window (state, then the inputs), the state it leaves being the last inputs; a sequence run in chunks of
// any size gives the bits of one call; the dispatched table runs it; every SIMD level gives the reference's bits
// (channels past the last whole vector, no window, and windows too long for registers included).
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

TEST(ShortConvTest, ScalarEqualsTheConvolutionOverStateAndInputs) {
  std::mt19937 rng(3);
  for (int32_t taps : {2, 3, 4}) {
    const int64_t dim = 37, n = 9;
    const auto w = random_floats(rng, taps * dim, 1.0f);
    const auto state0 = random_floats(rng, (taps - 1) * dim, 1.0f);
    const auto x = random_floats(rng, n * dim, 1.0f);
    std::vector<float> state = state0, y(size_t(n * dim));
    ref::short_conv(w.data(), state.data(), x.data(), y.data(), dim, taps, n);
    for (int64_t c = 0; c < dim; ++c) {
      // The channel's whole input: its kept state, oldest first, then the new inputs.
      std::vector<double> seq;
      for (int32_t k = 0; k < taps - 1; ++k) seq.push_back(state0[size_t(k * dim + c)]);
      for (int64_t t = 0; t < n; ++t) seq.push_back(x[size_t(t * dim + c)]);
      for (int64_t t = 0; t < n; ++t) {
        double want = 0.0;
        for (int32_t k = 0; k < taps; ++k) want += seq[size_t(t + k)] * w[size_t(k * dim + c)];
        ASSERT_NEAR(y[size_t(t * dim + c)], want, 1e-5) << "taps " << taps << " channel " << c << " token " << t;
      }
      for (int32_t k = 0; k < taps - 1; ++k)
        EXPECT_EQ(state[size_t(k * dim + c)], float(seq[seq.size() - size_t(taps - 1) + size_t(k)]));
    }
  }
}

TEST(ShortConvTest, ChunksGiveTheWholeCallsBitsAndTheOutputMayAliasTheInput) {
  std::mt19937 rng(4);
  const int64_t dim = 64, n = 23;
  const int32_t taps = 3;
  const auto w = random_floats(rng, taps * dim, 1.0f);
  const auto x = random_floats(rng, n * dim, 2.0f);
  std::vector<float> state_whole(size_t((taps - 1) * dim), 0.0f), y_whole(size_t(n * dim));
  ref::short_conv(w.data(), state_whole.data(), x.data(), y_whole.data(), dim, taps, n);
  for (int64_t chunk : {1, 2, 5, 7}) {
    std::vector<float> state(size_t((taps - 1) * dim), 0.0f), y = x;  // in place
    for (int64_t first = 0; first < n; first += chunk) {
      const int64_t len = std::min(chunk, n - first);
      best_kernels().short_conv(w.data(), state.data(), y.data() + first * dim, y.data() + first * dim, dim, taps, len);
    }
    EXPECT_EQ(y, y_whole) << "chunks of " << chunk;
    EXPECT_EQ(state, state_whole) << "chunks of " << chunk;
  }
}

class ShortConvLevelTest : public SimdLevelTest {};

TEST_P(ShortConvLevelTest, EqualsTheScalarReferenceBitForBit) {
  std::mt19937 rng(5);
  for (int64_t dim : {int64_t(8), int64_t(40), int64_t(256)})
    for (int32_t taps : {1, 2, 4, 9}) {
      const int64_t n = 11;
      const auto w = random_floats(rng, taps * dim, 1.0f);
      const auto x = random_floats(rng, n * dim, 2.0f);
      const auto state0 = random_floats(rng, (taps - 1) * dim, 1.5f);
      std::vector<float> want_state = state0, want(size_t(n * dim)), state = state0, got = x;  // got in place
      ref::short_conv(w.data(), want_state.data(), x.data(), want.data(), dim, taps, n);
      simd_->short_conv(w.data(), state.data(), got.data(), got.data(), dim, taps, n);
      EXPECT_EQ(got, want) << "dim " << dim << " taps " << taps;
      EXPECT_EQ(state, want_state) << "dim " << dim << " taps " << taps;
    }
}

PAGODA_TEST_EVERY_SIMD_LEVEL(ShortConvLevelTest);

}  // namespace
}  // namespace pagoda::kernels
