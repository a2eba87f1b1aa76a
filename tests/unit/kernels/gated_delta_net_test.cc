// gated_delta_net (Qwen3.5's linear-attention recurrence): the scalar reference against the recurrence written out
// in double on the untransposed state S (decay, delta rule, readout), over strided rows as the model lays them out;
// a sequence run in chunks of any size gives the bits of one call; every SIMD level agrees with the scalar reference
// to float-order noise, head sizes with a lane tail included.
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

// Tokens' rows of q, k, v (each head_dim, L2-normed q and k) at a stride, and their g (negative) and beta in (0, 1).
struct DeltaNetInputs {
  int32_t d = 0;
  int64_t n = 0, stride = 0;
  std::vector<float> qkv, g, beta;
};

DeltaNetInputs make_delta_net_inputs(std::mt19937& rng, int32_t d, int64_t n) {
  DeltaNetInputs in{d, n, 3 * int64_t(d) + 5, {}, {}, {}};
  in.qkv = random_floats(rng, n * in.stride, 1.0f);
  for (int64_t t = 0; t < n; ++t)
    for (int part = 0; part < 2; ++part) {
      float* x = in.qkv.data() + t * in.stride + part * d;
      double sum = 0.0;
      for (int32_t i = 0; i < d; ++i) sum += double(x[i]) * x[i];
      for (int32_t i = 0; i < d; ++i) x[i] = float(x[i] / std::sqrt(sum));
    }
  std::uniform_real_distribution<float> decay(-1.0f, -0.01f), strength(0.05f, 0.95f);
  for (int64_t t = 0; t < n; ++t) {
    in.g.push_back(decay(rng));
    in.beta.push_back(strength(rng));
  }
  return in;
}

TEST(GatedDeltaNetTest, ScalarEqualsTheDeltaRuleWrittenOut) {
  std::mt19937 rng(5);
  for (int32_t d : {8, 32, 128}) {
    const int64_t n = 7;
    const DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
    const auto state0 = random_floats(rng, int64_t(d) * d, 0.5f);
    std::vector<float> state = state0, out(size_t(n * (d + 3)));
    const float scale = 1.0f / std::sqrt(float(d));
    ref::gated_delta_net(state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride, in.g.data(),
                         in.beta.data(), 1, out.data(), d + 3, d, n, scale);
    // S[i][j] (key i, value j) = state0[j * d + i].
    std::vector<double> s(size_t(d) * d);
    for (int32_t i = 0; i < d; ++i)
      for (int32_t j = 0; j < d; ++j) s[size_t(i * d + j)] = state0[size_t(j * d + i)];
    for (int64_t t = 0; t < n; ++t) {
      const float* q = in.qkv.data() + t * in.stride;
      const float* k = q + d;
      const float* v = q + 2 * d;
      for (double& x : s) x *= std::exp(double(in.g[size_t(t)]));
      std::vector<double> delta(static_cast<size_t>(d));
      for (int32_t j = 0; j < d; ++j) {
        double sk = 0.0;
        for (int32_t i = 0; i < d; ++i) sk += s[size_t(i * d + j)] * k[i];
        delta[size_t(j)] = (v[j] - sk) * in.beta[size_t(t)];
      }
      for (int32_t i = 0; i < d; ++i)
        for (int32_t j = 0; j < d; ++j) s[size_t(i * d + j)] += k[i] * delta[size_t(j)];
      for (int32_t j = 0; j < d; ++j) {
        double o = 0.0;
        for (int32_t i = 0; i < d; ++i) o += s[size_t(i * d + j)] * q[i];
        ASSERT_NEAR(out[size_t(t * (d + 3) + j)], o * scale, 1e-4) << "d " << d << " token " << t << " value " << j;
      }
    }
    for (int32_t i = 0; i < d; ++i)
      for (int32_t j = 0; j < d; ++j) ASSERT_NEAR(state[size_t(j * d + i)], s[size_t(i * d + j)], 1e-4);
  }
}

TEST(GatedDeltaNetTest, ChunksGiveTheWholeCallsBits) {
  std::mt19937 rng(6);
  const int32_t d = 32;
  const int64_t n = 19;
  const DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<float> state_whole(size_t(d) * d, 0.0f), out_whole(size_t(n * d));
  best_kernels().gated_delta_net(state_whole.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d,
                                 in.stride, in.g.data(), in.beta.data(), 1, out_whole.data(), d, d, n, scale);
  for (int64_t chunk : {1, 3, 8}) {
    std::vector<float> state(size_t(d) * d, 0.0f), out(size_t(n * d));
    for (int64_t first = 0; first < n; first += chunk) {
      const int64_t len = std::min(chunk, n - first);
      const float* row = in.qkv.data() + first * in.stride;
      best_kernels().gated_delta_net(state.data(), row, row + d, row + 2 * d, in.stride, in.g.data() + first,
                                     in.beta.data() + first, 1, out.data() + first * d, d, d, len, scale);
    }
    EXPECT_EQ(out, out_whole) << "chunks of " << chunk;
    EXPECT_EQ(state, state_whole) << "chunks of " << chunk;
  }
}

class GatedDeltaNetLevelTest : public SimdLevelTest {};

TEST_P(GatedDeltaNetLevelTest, EqualsTheScalarReference) {
  std::mt19937 rng(7);
  for (int32_t d : {12, 32, 128}) {
    const int64_t n = 9;
    const DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
    const auto state0 = random_floats(rng, int64_t(d) * d, 0.5f);
    const float scale = 1.0f / std::sqrt(float(d));
    std::vector<float> want_state = state0, want(size_t(n * d)), state = state0, got(size_t(n * d));
    ref::gated_delta_net(want_state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                         in.g.data(), in.beta.data(), 1, want.data(), d, d, n, scale);
    simd_->gated_delta_net(state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                           in.g.data(), in.beta.data(), 1, got.data(), d, d, n, scale);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5f) << "d " << d << " output " << i;
    for (size_t i = 0; i < want_state.size(); ++i)
      ASSERT_NEAR(state[i], want_state[i], 1e-5f) << "d " << d << " state " << i;
  }
}

PAGODA_TEST_EVERY_SIMD_LEVEL(GatedDeltaNetLevelTest);

}  // namespace
}  // namespace pagoda::kernels
