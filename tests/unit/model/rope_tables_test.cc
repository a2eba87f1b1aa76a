// RoPE's cos/sin tables against angles computed here in double from the definition (HF's inv_freq =
// 1 / (factor_i * theta^(2i / rope_dim)), cos and sin times the attention factor): LongRoPE's short set up to
// the original context and the long set beyond it, chosen by the configured context alone; llama3's divisors;
// linear scaling; YaRN's correction dims, magnitude and per-pair blend against values worked by hand from llama.cpp's
// formulas (ggml's rope_yarn, llama-context's mscale), and the overrides a user gives.
#include "model/rope_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/rope_scaling.h"

namespace pagoda {
namespace {

// Phi-3's layout in small: 4 rotated pairs, an original context of 1024, an attention factor derived as HF does
// for a context of 16384 (sqrt(1 + ln 16 / ln 1024)).
ModelConfig longrope_config() {
  ModelConfig c;
  c.rope_dim = 8;
  c.rope_theta = 10000.0f;
  c.rope_neox = true;
  c.rope_short_factors = {1.0f, 1.1f, 1.3f, 1.7f};
  c.rope_long_factors = {1.0f, 1.5f, 4.0f, 13.0f};
  c.rope_original_context = 1024;
  c.rope_attn_factor = float(std::sqrt(1.0 + std::log(16.0) / std::log(1024.0)));
  return c;
}

const std::vector<Pos> kPositions = {0, 1, 7, 100, 1023};

// The tables as f32 gives them: angles up to ~1000 radians, so each is within a few f32 ulps of 1000 of the double
// one; 1e-3 still tells every factor set here from every other at each position past 0.
void expect_tables(const ModelConfig& c, int32_t rope_context, float freq_scale, const std::vector<float>& divisors,
                   double magnitude) {
  const size_t half = size_t(c.rope_dim / 2);
  std::vector<float> cs(kPositions.size() * half), sn(kPositions.size() * half);
  RopeParams p = rope_params(c, false);
  p.freq_scale = freq_scale;
  fill_rope_tables(c, kPositions, p, rope_context, cs.data(), sn.data());
  for (size_t t = 0; t < kPositions.size(); ++t)
    for (size_t i = 0; i < half; ++i) {
      const double inv_freq = 1.0 / (double(divisors[i]) * std::pow(double(c.rope_theta), 2.0 * double(i) / 8.0));
      const double angle = double(kPositions[t]) * double(freq_scale) * inv_freq;
      EXPECT_NEAR(cs[t * half + i], std::cos(angle) * magnitude, 1e-3) << "position " << kPositions[t] << " pair " << i;
      EXPECT_NEAR(sn[t * half + i], std::sin(angle) * magnitude, 1e-3) << "position " << kPositions[t] << " pair " << i;
    }
}

TEST(RopeTablesTest, LongRopeTakesTheShortSetUpToTheOriginalContext) {
  const ModelConfig c = longrope_config();
  EXPECT_EQ(rope_divisors(c, 1024), &c.rope_short_factors);
  EXPECT_EQ(rope_divisors(c, 64), &c.rope_short_factors);
  expect_tables(c, 1024, 1.0f, c.rope_short_factors, 1.1832159566199232);
}

TEST(RopeTablesTest, LongRopeTakesTheLongSetBeyondTheOriginalContextAtEveryPosition) {
  // Positions below 1024 too: the set follows the configured context (llama.cpp's n_ctx_seq > n_ctx_orig_yarn), not
  // a position or the size of a workspace.
  const ModelConfig c = longrope_config();
  EXPECT_EQ(rope_divisors(c, 1025), &c.rope_long_factors);
  expect_tables(c, 1025, 1.0f, c.rope_long_factors, 1.1832159566199232);
  expect_tables(c, 4096, 1.0f, c.rope_long_factors, 1.1832159566199232);
}

TEST(RopeTablesTest, Llama3DivisorsAndLinearScalingWithoutLongRope) {
  ModelConfig c;
  c.rope_dim = 8;
  c.rope_theta = 500000.0f;
  EXPECT_EQ(rope_divisors(c, 4096), nullptr);
  expect_tables(c, 4096, 0.25f, {1.0f, 1.0f, 1.0f, 1.0f}, 1.0);
  c.rope_freq_factors = {1.0f, 2.0f, 5.5f, 8.0f};
  EXPECT_EQ(rope_divisors(c, 4096), &c.rope_freq_factors);
  expect_tables(c, 4096, 1.0f, c.rope_freq_factors, 1.0);
}

// A YaRN config in small: 4 pairs, base 10000, an original context of 64 scaled by 4.
ModelConfig yarn_config() {
  ModelConfig c;
  c.rope_dim = 8;
  c.rope_theta = 10000.0f;
  c.context_length = 256;
  c.rope_original_context = 64;
  c.rope_scaling = RopeScalingType::kYarn;
  c.rope_freq_scale = 0.25f;
  return c;
}

TEST(RopeTablesTest, YarnCorrectionDimsAreLlamaTwosTwentyAndFortySix) {
  // rope_dim 128, base 10000, original context 4096: 128 ln(4096 / (32 * 2 pi)) / (2 ln 10000) = 20.94 -> 20 and
  // 128 ln(4096 / (2 pi)) / (2 ln 10000) = 45.03 -> 46.
  float dims[2];
  yarn_corr_dims(128, 4096, 10000.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[0], 20.0f);
  EXPECT_EQ(dims[1], 46.0f);
  // Small: 8 ln(64 / (32 * 2 pi)) / (2 ln 10000) = -0.50 -> 0 (clamped), 8 ln(64 / (2 pi)) / (2 ln 10000) = 1.008 -> 2.
  yarn_corr_dims(8, 64, 10000.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[0], 0.0f);
  EXPECT_EQ(dims[1], 2.0f);
  // The high end is clamped to rope_dim - 1.
  yarn_corr_dims(8, 1 << 20, 10.0f, 32.0f, 1.0f, dims);
  EXPECT_EQ(dims[1], 7.0f);
}

TEST(RopeTablesTest, YarnMscaleIsOnePlusATenthOfTheLogOfTheFactor) {
  EXPECT_FLOAT_EQ(yarn_get_mscale(1.0f, 1.0f), 1.0f);
  EXPECT_FLOAT_EQ(yarn_get_mscale(0.5f, 1.0f), 1.0f);
  EXPECT_NEAR(yarn_get_mscale(4.0f, 1.0f), 1.0 + 0.1 * std::log(4.0), 1e-6);
  EXPECT_NEAR(yarn_get_mscale(40.0f, 0.707f), 1.0 + 0.0707 * std::log(40.0), 1e-6);
}

// Position 100 of yarn_config(): corr dims 0 and 2, so pair i's ramp is 1 - clamp(i / 2): 1, 0.5, 0, 0. Extrapolated
// angles 100 * 10000^(-i/4) = 100, 10, 1, 0.1; interpolated a quarter of those; blended 100, 0.5 * 2.5 + 0.5 * 10 =
// 6.25, 0.25, 0.025.
TEST(RopeTablesTest, YarnBlendsExtrapolationAndInterpolationPerPair) {
  const ModelConfig c = yarn_config();
  const RopeParams p = rope_params(c, false);
  EXPECT_EQ(p.ext_factor, 1.0f);
  EXPECT_EQ(p.corr_low, 0.0f);
  EXPECT_EQ(p.corr_high, 2.0f);
  const std::vector<Pos> positions = {100};
  std::vector<float> cs(4), sn(4);
  fill_rope_tables(c, positions, p, 256, cs.data(), sn.data());
  const double expected_angles[] = {100.0, 6.25, 0.25, 0.025};
  const double magnitude = 1.0 + 0.1 * std::log(4.0);  // get_mscale(4)
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(cs[size_t(i)], std::cos(expected_angles[i]) * magnitude, 1e-4) << "pair " << i;
    EXPECT_NEAR(sn[size_t(i)], std::sin(expected_angles[i]) * magnitude, 1e-4) << "pair " << i;
  }
}

TEST(RopeTablesTest, YarnMagnitudeFollowsTheLogMultiplierAndTheAttentionFactor) {
  ModelConfig c = yarn_config();
  const std::vector<Pos> positions = {0};
  std::vector<float> cs(4), sn(4);
  // mscale_all_dim 1: get_mscale(4, 1) / get_mscale(4, 1) = 1.
  c.yarn_log_multiplier = 1.0f;
  fill_rope_tables(c, positions, rope_params(c, false), 256, cs.data(), sn.data());
  EXPECT_NEAR(cs[0], 1.0, 1e-6);
  // mscale_all_dim 0.5: (1 + 0.1 ln 4) / (1 + 0.05 ln 4), times rope.scaling.attn_factor 2.
  c.yarn_log_multiplier = 0.5f;
  c.rope_attn_factor = 2.0f;
  fill_rope_tables(c, positions, rope_params(c, false), 256, cs.data(), sn.data());
  EXPECT_NEAR(cs[0], 2.0 * (1.0 + 0.1 * std::log(4.0)) / (1.0 + 0.05 * std::log(4.0)), 1e-5);
  // The ramp off (yarn_ext_factor 0): plain linear scaling, magnitude yarn_attn_factor * attn_factor.
  c.yarn_ext_factor = 0.0f;
  c.yarn_attn_factor = 1.5f;
  const RopeParams p = rope_params(c, false);
  EXPECT_EQ(p.ext_factor, 0.0f);
  const std::vector<Pos> at100 = {100};
  fill_rope_tables(c, at100, p, 256, cs.data(), sn.data());
  EXPECT_NEAR(cs[1], std::cos(100.0 * 0.1 * 0.25) * 3.0, 1e-4);
}

TEST(RopeTablesTest, LinearScalingHasNoRampAndNoneIsNeverScaled) {
  ModelConfig c = yarn_config();
  c.rope_scaling = RopeScalingType::kLinear;
  EXPECT_EQ(rope_params(c, false).ext_factor, 0.0f);
  EXPECT_EQ(rope_params(c, false).freq_scale, 0.25f);
  c.rope_scaling = RopeScalingType::kNone;
  EXPECT_EQ(rope_params(c, false).freq_scale, 1.0f);
}

TEST(RopeScalingTest, OverridesReplaceTheFilesSettingsAndAreChecked) {
  ModelConfig c = yarn_config();
  c.rope_scaling = RopeScalingType::kLinear;
  c.rope_freq_scale = 1.0f;
  RopeScalingOverrides o;
  EXPECT_TRUE(o.empty());
  o.type = RopeScalingType::kYarn;
  o.rope_scale = 8.0f;
  o.yarn_original_context = 128;
  o.rope_freq_base = 500000.0f;
  o.yarn_beta_fast = 16.0f;
  ASSERT_TRUE(apply_rope_overrides(o, c).ok());
  EXPECT_EQ(c.rope_scaling, RopeScalingType::kYarn);
  EXPECT_EQ(c.rope_freq_scale, 0.125f);
  EXPECT_EQ(c.rope_original_context, 128);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.yarn_beta_fast, 16.0f);
  EXPECT_NE(describe_rope_scaling(c).find("yarn: factor 8, original context 128"), std::string::npos);
  // --rope-freq-scale wins over --rope-scale; type none is never scaled.
  o.rope_freq_scale = 0.5f;
  ASSERT_TRUE(apply_rope_overrides(o, c).ok());
  EXPECT_EQ(c.rope_freq_scale, 0.5f);
  RopeScalingOverrides none;
  none.type = RopeScalingType::kNone;
  ASSERT_TRUE(apply_rope_overrides(none, c).ok());
  EXPECT_EQ(c.rope_freq_scale, 1.0f);
  // Out of range: named.
  RopeScalingOverrides bad;
  bad.yarn_beta_slow = 64.0f;
  Status s = apply_rope_overrides(bad, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("yarn_beta_fast 16 must exceed yarn_beta_slow 64"), std::string::npos) << s.message();
  RopeScalingOverrides zero;
  zero.rope_scale = 0.0f;
  EXPECT_FALSE(apply_rope_overrides(zero, c).ok());
  EXPECT_EQ(parse_rope_scaling_type("yarn"), RopeScalingType::kYarn);
  EXPECT_EQ(parse_rope_scaling_type("dynamic"), std::nullopt);
}

}  // namespace
}  // namespace pagoda
