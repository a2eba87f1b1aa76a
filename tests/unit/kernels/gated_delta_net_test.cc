// gated_delta_net (Qwen3.5's linear-attention recurrence): the scalar reference against the recurrence written out
// in double on the untransposed state S (decay, delta rule, readout), over strided rows as the model lays them out;
// a sequence run in chunks of any size gives the bits of one call; every SIMD level agrees with the scalar reference
// to float-order noise, head sizes with a lane tail included; the chunked form's reference equals the recurrence within
// float rounding and every level's chunked form its reference.
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
  best_kernels().gated_delta_net(state_whole.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                                 in.g.data(), in.beta.data(), 1, out_whole.data(), d, d, n, scale);
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

// The chunked form's reference against the recurrence's, over lengths inside one chunk, exactly one, and several
// with a partial last one, from a non-zero state; strong decays (exp(G) far below float's normal range within a
// chunk) included.
TEST(GatedDeltaNetTest, ChunkedScalarEqualsTheRecurrence) {
  std::mt19937 rng(8);
  for (int32_t d : {8, 32, 128})
    for (int64_t n : {int64_t(1), int64_t(5), kDeltaNetChunk, kDeltaNetChunk + 1, 2 * kDeltaNetChunk + 23})
      for (float strong_decay : {0.0f, -30.0f}) {
        DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
        if (strong_decay != 0.0f)
          for (int64_t t = 0; t < n; t += 3) in.g[size_t(t)] = strong_decay;
        const auto state0 = random_floats(rng, int64_t(d) * d, 0.5f);
        const float scale = 1.0f / std::sqrt(float(d));
        std::vector<float> want_state = state0, want(size_t(n * d)), state = state0, got(size_t(n * d));
        ref::gated_delta_net(want_state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                             in.g.data(), in.beta.data(), 1, want.data(), d, d, n, scale);
        ref::gated_delta_net_chunked(state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                                     in.g.data(), in.beta.data(), 1, got.data(), d, d, n, scale);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5f)
              << "d " << d << " n " << n << " decay " << strong_decay << " output " << i;
        for (size_t i = 0; i < want_state.size(); ++i)
          ASSERT_NEAR(state[i], want_state[i], 2e-5f)
              << "d " << d << " n " << n << " decay " << strong_decay << " state " << i;
      }
}

// Calls cut at multiples of the chunk see the same chunks as one call, so they give its bits.
TEST(GatedDeltaNetTest, ChunkedCallsCutAtChunkBoundariesGiveTheWholeCallsBits) {
  std::mt19937 rng(9);
  const int32_t d = 32;
  const int64_t n = 3 * kDeltaNetChunk + 7;
  const DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
  const float scale = 1.0f / std::sqrt(float(d));
  std::vector<float> state_whole(size_t(d) * d, 0.0f), out_whole(size_t(n * d));
  best_kernels().gated_delta_net_chunked(state_whole.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d,
                                         in.stride, in.g.data(), in.beta.data(), 1, out_whole.data(), d, d, n, scale);
  for (int64_t cut : {kDeltaNetChunk, 2 * kDeltaNetChunk}) {
    std::vector<float> state(size_t(d) * d, 0.0f), out(size_t(n * d));
    for (int64_t first = 0; first < n; first += cut) {
      const int64_t len = std::min(cut, n - first);
      const float* row = in.qkv.data() + first * in.stride;
      best_kernels().gated_delta_net_chunked(state.data(), row, row + d, row + 2 * d, in.stride, in.g.data() + first,
                                             in.beta.data() + first, 1, out.data() + first * d, d, d, len, scale);
    }
    EXPECT_EQ(out, out_whole) << "calls of " << cut;
    EXPECT_EQ(state, state_whole) << "calls of " << cut;
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

// The chunked form through this level's matmul and vector exp against its scalar reference, head sizes with a lane
// tail and chunks with a partial last one included.
TEST_P(GatedDeltaNetLevelTest, ChunkedEqualsTheScalarReference) {
  std::mt19937 rng(10);
  for (int32_t d : {12, 32, 128})
    for (int64_t n : {int64_t(3), kDeltaNetChunk, 2 * kDeltaNetChunk + 19}) {
      const DeltaNetInputs in = make_delta_net_inputs(rng, d, n);
      const auto state0 = random_floats(rng, int64_t(d) * d, 0.5f);
      const float scale = 1.0f / std::sqrt(float(d));
      std::vector<float> want_state = state0, want(size_t(n * (d + 1))), state = state0, got(size_t(n * (d + 1)));
      ref::gated_delta_net_chunked(want_state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d,
                                   in.stride, in.g.data(), in.beta.data(), 1, want.data(), d + 1, d, n, scale);
      simd_->gated_delta_net_chunked(state.data(), in.qkv.data(), in.qkv.data() + d, in.qkv.data() + 2 * d, in.stride,
                                     in.g.data(), in.beta.data(), 1, got.data(), d + 1, d, n, scale);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5f) << "d " << d << " n " << n << " output " << i;
      for (size_t i = 0; i < want_state.size(); ++i)
        ASSERT_NEAR(state[i], want_state[i], 1e-5f) << "d " << d << " n " << n << " state " << i;
    }
}

PAGODA_TEST_EVERY_SIMD_LEVEL(GatedDeltaNetLevelTest);

}  // namespace
}  // namespace pagoda::kernels
