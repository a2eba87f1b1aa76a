// AWQ's scale search: on activations with a few salient (large) channels it picks alpha > 0 and lowers the
// output MSE below plain group quantization; it never reports worse than alpha = 0; the clipping search never
// raises the error; and the effective weights of s = 1 are plain quantization.
#include "quant/awq_scale_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "quant/block_awq_int4.h"

namespace pagoda::quant {
namespace {

struct Layer {
  std::vector<float> w;  // f32 [num_out, num_in]
  LinearInputStats stats;
};

Layer make_layer(int64_t num_out, int64_t num_in, int64_t num_samples, float salient_gain, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Layer l;
  l.w.resize(size_t(num_out * num_in));
  for (float& v : l.w) v = 0.02f * normal(rng);
  l.stats.num_in = num_in;
  l.stats.samples.resize(size_t(num_samples * num_in));
  l.stats.mean_abs.assign(size_t(num_in), 0.0f);
  for (int64_t n = 0; n < num_samples; ++n)
    for (int64_t i = 0; i < num_in; ++i) {
      const float gain = i % 17 == 3 ? salient_gain : 1.0f;  // a few channels carry large activations
      const float x = gain * normal(rng);
      l.stats.samples[size_t(n * num_in + i)] = x;
      l.stats.mean_abs[size_t(i)] += std::fabs(x) / float(num_samples);
    }
  l.stats.num_rows_seen = num_samples;
  return l;
}

TEST(AwqScaleSearchTest, SalientChannelsGetScaledAndTheErrorDrops) {
  const Layer l = make_layer(48, 128, 64, 20.0f, 1);
  for (int64_t group : {32, 64, 128}) {
    const AwqScales s = search_awq_scales(l.w.data(), 48, 128, group, l.stats);
    EXPECT_GT(s.alpha, 0.0f) << group;
    EXPECT_LT(s.mse, 0.8 * s.mse_unscaled) << group;
    ASSERT_EQ(s.scales.size(), 128u);
    EXPECT_GT(s.scales[3], s.scales[4]) << "the salient channel 3 gets the larger scale";
  }
}

TEST(AwqScaleSearchTest, NeverWorseThanPlainQuantization) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    const Layer l = make_layer(20, 64, 16, 1.0f, seed);  // no salient channels
    const AwqScales s = search_awq_scales(l.w.data(), 20, 64, 32, l.stats, 10);
    EXPECT_LE(s.mse, s.mse_unscaled);
    EXPECT_GE(s.alpha, 0.0f);
    EXPECT_LE(s.alpha, 1.0f);
  }
}

TEST(AwqScaleSearchTest, ClippingNeverRaisesTheCalibrationError) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    const Layer l = make_layer(24, 128, 32, 8.0f, seed);
    for (int64_t group : {32, 128}) {
      const AwqScales s = search_awq_scales(l.w.data(), 24, 128, group, l.stats);
      double mse = -1.0;
      const std::vector<float> clipped = clip_awq_groups(l.w.data(), 24, 128, group, s.scales, l.stats, &mse);
      ASSERT_EQ(clipped.size(), l.w.size());
      EXPECT_LE(mse, s.mse * (1.0 + 1e-9)) << "r = 1 is a candidate";
      // Each value is W diag(s) or clamped towards zero, never pushed out.
      for (int64_t o = 0; o < 24; ++o)
        for (int64_t i = 0; i < 128; ++i) {
          const float v = l.w[size_t(o * 128 + i)] * s.scales[size_t(i)];
          const float c = clipped[size_t(o * 128 + i)];
          EXPECT_LE(std::fabs(c), std::fabs(v) * (1.0f + 1e-6f));
          EXPECT_TRUE(c == v || c * v > 0.0f);
        }
      // No shrink allowed: exactly W diag(s).
      const std::vector<float> unclipped =
          clip_awq_groups(l.w.data(), 24, 128, group, s.scales, l.stats, nullptr, 20, 0.0f);
      for (int64_t o = 0; o < 24; ++o)
        for (int64_t i = 0; i < 128; ++i)
          ASSERT_EQ(unclipped[size_t(o * 128 + i)], l.w[size_t(o * 128 + i)] * s.scales[size_t(i)]);
    }
  }
}

TEST(AwqScaleSearchTest, UnitScalesArePlainQuantization) {
  const Layer l = make_layer(3, 64, 1, 1.0f, 9);
  const std::vector<float> eff = awq_effective_weights(l.w.data(), 3, 64, 32, std::vector<float>(64, 1.0f));
  std::vector<uint8_t> blocks(size_t(awq_int4_row_bytes(64, 32)));
  std::vector<float> expected(64);
  for (int64_t o = 0; o < 3; ++o) {
    quantize_row_awq_int4(l.w.data() + o * 64, blocks.data(), 64, 32);
    dequantize_row_awq_int4(blocks.data(), expected.data(), 64, 32);
    for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(eff[size_t(o * 64 + i)], expected[size_t(i)]);
  }
}

}  // namespace
}  // namespace pagoda::quant
