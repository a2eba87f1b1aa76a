// compute_token_logprobs against a double-precision log softmax.
#include "sampling/token_logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace pagoda {
namespace {

TEST(TokenLogprobsTest, MatchesLogSoftmaxAndSortsTheAlternatives) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 4.0f);
  std::vector<float> logits(1000);
  for (float& l : logits) l = dist(rng);
  double z = 0;
  for (float l : logits) z += std::exp(double(l));
  const TokenLogprobs lp = compute_token_logprobs(logits, 17, 5);
  EXPECT_NEAR(lp.logprob, double(logits[17]) - std::log(z), 1e-4);
  ASSERT_EQ(lp.top.size(), 5u);
  for (size_t i = 1; i < lp.top.size(); ++i) EXPECT_GE(lp.top[i - 1].second, lp.top[i].second);
  const auto max_it = std::max_element(logits.begin(), logits.end());
  EXPECT_EQ(lp.top[0].first, TokenId(max_it - logits.begin()));
  double total = 0;
  for (float l : logits) total += std::exp(double(l) - std::log(z));
  EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(TokenLogprobsTest, ZeroAlternativesAndNanLogits) {
  std::vector<float> logits = {0.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  const TokenLogprobs lp = compute_token_logprobs(logits, 0, 0);
  EXPECT_TRUE(lp.top.empty());
  EXPECT_NEAR(lp.logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(compute_token_logprobs(logits, 2, 3).top[2].first, 1);  // NaN is the least likely
}

TEST(TokenLogprobsTest, RankCountsTheStrictlyMoreLikelyTokens) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, -1.0f};
  EXPECT_EQ(compute_token_logprobs(logits, 1, 0).rank, 1);
  EXPECT_EQ(compute_token_logprobs(logits, 3, 0).rank, 1);  // a tie shares the better rank, as vLLM's count does
  EXPECT_EQ(compute_token_logprobs(logits, 2, 0).rank, 3);
  EXPECT_EQ(compute_token_logprobs(logits, 4, 0).rank, 5);
}

}  // namespace
}  // namespace pagoda
