// RoPE's cos/sin tables against angles computed here in double from the definition (HF's inv_freq =
// 1 / (factor_i * theta^(2i / rope_dim)), cos and sin times the attention factor): LongRoPE's short set up to
// the original context and the long set beyond it, chosen by the configured context alone; llama3's divisors;
// linear scaling.
#include "model/rope_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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
  fill_rope_tables(c, kPositions, c.rope_theta, freq_scale, rope_context, cs.data(), sn.data());
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

}  // namespace
}  // namespace pagoda
