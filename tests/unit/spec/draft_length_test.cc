// Adaptive draft length: the best k by expected tokens per unit of step cost (worked examples, with one rate or a
// chance per draft), the acceptance estimate's prior and forgetting, a sequence's chooser (chances scaled by how
// they fared, shadows, exploration), and the step-cost fit on synthetic steps (exact, noisy, too uniform to fit).
#include "spec/draft_length.h"

#include <gtest/gtest.h>

#include <random>

namespace pagoda {
namespace {

TEST(BestNumDrafts, WorkedExamples) {
  EXPECT_EQ(best_num_drafts(0.0, 0.1, 8), 0);  // never accepted: never worth it
  EXPECT_EQ(best_num_drafts(0.6, 0.0, 8), 8);  // free tokens: as many as allowed
  EXPECT_EQ(best_num_drafts(1.0, 0.9, 5), 5);  // always accepted, each token cheaper than a step
  EXPECT_EQ(best_num_drafts(0.5, 0.5, 8), 0);  // k = 1: 1.5 tokens for 1.5 steps, a tie: no speculation
  // a = 0.8, c = 0.25: E/cost = 1.44, 1.627, 1.687, 1.681 for k = 1..4.
  EXPECT_EQ(best_num_drafts(0.8, 0.25, 8), 3);
  EXPECT_EQ(best_num_drafts(0.8, 0.25, 2), 2);  // capped
  EXPECT_EQ(best_num_drafts(0.9, 1.0, 8), 0);   // a compute-bound step: a token costs a step, 0.9 < 1
}

TEST(BestNumDrafts, WithAChanceForEachDraft) {
  const std::vector<float> sure_then_guess{0.95f, 0.95f, 0.15f, 0.9f};
  // c = 1/6: E/cost = 1.67, 2.14, 1.99, 1.87 for k = 1..4.
  EXPECT_EQ(best_num_drafts(sure_then_guess, 1.0 / 6.0), 2);
  EXPECT_EQ(best_num_drafts(sure_then_guess, 0.0), 4);                       // free tokens
  EXPECT_EQ(best_num_drafts(std::vector<float>{0.1f, 1.0f, 1.0f}, 0.3), 0);  // a long sure chain behind a guess
  EXPECT_EQ(best_num_drafts(std::vector<float>{}, 0.1), 0);
  // The same as one rate where every chance is that rate.
  for (double a : {0.3, 0.6, 0.9})
    for (double c : {0.05, 0.2, 0.5})
      EXPECT_EQ(best_num_drafts(std::vector<float>(6, float(a)), c), best_num_drafts(a, c, 6));
}

TEST(DraftLengthChooser, ScalesChancesByHowTheyFaredAndLearnsFromShadows) {
  DraftLengthChooser d;
  const std::vector<TokenId> drafts{7, 8, 9};
  const std::vector<float> chances{0.9f, 0.9f, 0.9f};
  EXPECT_DOUBLE_EQ(d.chance_factor(), 1.0);
  EXPECT_EQ(d.choose(drafts, chances, 0.2), 3);
  const double rate = d.acceptance_rate();
  for (int i = 0; i < 10; ++i) {  // chances of 0.9 whose drafts are all rejected
    const int32_t k = d.choose(drafts, chances, 0.2);
    ASSERT_GT(k, 0);
    d.record_verified(k, 0);
  }
  EXPECT_LT(d.chance_factor(), 0.3);
  EXPECT_DOUBLE_EQ(d.acceptance_rate(), rate);  // the rate judges drafts without chances
  // At a dearer token no draft pays now (0.9 x 0.24 against 0.3): the first is a shadow, and a model that agrees
  // with it lifts the factor.
  EXPECT_EQ(d.choose(drafts, chances, 0.3), 0);
  EXPECT_EQ(d.shadow(), 7);
  const double factor = d.chance_factor();
  d.record_sampled(7);
  EXPECT_GT(d.chance_factor(), factor);
  EXPECT_EQ(d.shadow(), -1);
  // Drafts without chances go by the rate, and train it.
  EXPECT_EQ(d.choose(drafts, {}, 0.2), best_num_drafts(rate, 0.2, 3));
  d.record_verified(1, 0);
  EXPECT_LT(d.acceptance_rate(), rate);
}

TEST(DraftLengthChooser, VerifiesOneDraftEverySixteenStepsWhenTheFirstLooksLikelierThanNot) {
  DraftLengthChooser d;
  const std::vector<TokenId> drafts{7};
  std::vector<int32_t> verified;
  for (int step = 1; step <= 40; ++step) {
    const int32_t k = d.choose(drafts, std::vector<float>{0.6f}, 0.9);  // a draft costs nearly a step: never pays
    if (k > 0) {
      verified.push_back(step);
      d.record_verified(k, 1);
    } else {
      d.record_sampled(7);
    }
  }
  EXPECT_EQ(verified, (std::vector<int32_t>{16, 32}));
  DraftLengthChooser unlikely;
  for (int step = 1; step <= 40; ++step) {
    ASSERT_EQ(unlikely.choose(drafts, std::vector<float>{0.3f}, 0.9), 0);
    unlikely.record_sampled(8);
  }
}

TEST(AcceptanceEstimate, StartsAtThePriorAndFollowsRecentVerdicts) {
  AcceptanceEstimate e;
  EXPECT_DOUBLE_EQ(e.rate(), AcceptanceEstimate::kPriorRate);
  for (int i = 0; i < 30; ++i) e.record(4, 4);  // everything accepted
  EXPECT_GT(e.rate(), 0.95);
  for (int i = 0; i < 60; ++i) e.record(4, 0);  // then every first draft rejected
  EXPECT_LT(e.rate(), 0.1);
  e.record(0, 0);  // nothing verified: no change
  const double r = e.rate();
  e.record(0, 0);
  EXPECT_DOUBLE_EQ(e.rate(), r);
}

TEST(StepCostModel, FitsFixedAndPerTokenCostsAndFallsBackUntilItCan) {
  StepCostModel m(0.995, 0.3);
  for (int i = 0; i < 50; ++i) m.record(1, 120.0);  // every step the same size: nothing to separate
  EXPECT_FALSE(m.fitted());
  EXPECT_DOUBLE_EQ(m.marginal_cost(1), 0.3);
  for (int i = 0; i < 200; ++i) m.record(1 + i % 6, 100.0 + 20.0 * double(1 + i % 6));
  ASSERT_TRUE(m.fitted());
  EXPECT_NEAR(m.per_token_us(), 20.0, 1.0);
  EXPECT_NEAR(m.fixed_us(), 100.0, 5.0);
  EXPECT_NEAR(m.marginal_cost(1), 20.0 / 120.0, 0.02);
  EXPECT_NEAR(m.marginal_cost(10), 20.0 / 30.0, 0.03);  // the fixed cost is shared by the batch
}

TEST(StepCostModel, NoisyStepsStillGiveTheSlope) {
  StepCostModel m;
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0.0, 15.0);
  for (int i = 0; i < 2000; ++i) {
    const int32_t n = 1 + int32_t(rng() % 8);
    m.record(n, 50.0 + 40.0 * n + noise(rng));
  }
  ASSERT_TRUE(m.fitted());
  EXPECT_NEAR(m.per_token_us(), 40.0, 3.0);
  EXPECT_NEAR(m.fixed_us(), 50.0, 12.0);
}

TEST(StepCostModel, OneStepInSixteenATokenLargerKeepsTheFitMoving) {
  StepCostModel m;
  // A fit that puts a token at a whole step's cost (no fixed part), as a noisy stretch can leave it.
  for (int i = 0; i < 400; ++i) m.record(1 + i % 4, 90.0 * double(1 + i % 4));
  ASSERT_TRUE(m.fitted());
  EXPECT_NEAR(m.marginal_cost(1), 1.0, 0.01);
  // Then plain decode steps of one token with, as the scheduler's exploration gives, one of two tokens every 16th:
  // enough spread to refit, and the fit follows the machine (60 us fixed, 25 us a token).
  for (int i = 0; i < 3000; ++i) m.record(i % 16 == 15 ? 2 : 1, i % 16 == 15 ? 110.0 : 85.0);
  EXPECT_NEAR(m.per_token_us(), 25.0, 1.0);
  EXPECT_NEAR(m.fixed_us(), 60.0, 1.0);
  EXPECT_NEAR(m.marginal_cost(1), 25.0 / 85.0, 0.02);
}

TEST(StepCostModel, AClippedFitShrugsOffPreemptedStepsButFollowsALastingChange) {
  // Steps of 60 us + 20 us a token, and one in seven (of every size) stretched to 20x by another process taking the
  // core. Clipped at 1.5x the fit, they still lift it by about 9% (f = 6/7 + 1.5 f / 7 gives f = 1.09), both terms
  // alike, so the marginal cost stays.
  StepCostModel plain, clipped(0.995, 0.3, 1.5);
  for (int i = 0; i < 3000; ++i) {
    const int32_t n = 1 + i % 4;
    const double us = (60.0 + 20.0 * n) * (i % 7 == 3 ? 20.0 : 1.0);
    plain.record(n, us);
    clipped.record(n, us);
  }
  ASSERT_TRUE(clipped.fitted());
  EXPECT_NEAR(clipped.per_token_us(), 20.0, 2.5);
  EXPECT_NEAR(clipped.fixed_us(), 60.0, 8.0);
  EXPECT_NEAR(clipped.marginal_cost(1), 20.0 / 80.0, 0.02);
  EXPECT_GT(plain.per_token_us(), 40.0);  // what the outliers do to an unclipped fit
  // The machine gets twice as slow for good: the clipped fit follows, a factor of at most 1.5 a step.
  for (int i = 0; i < 3000; ++i) clipped.record(1 + i % 4, 2.0 * (60.0 + 20.0 * (1 + i % 4)));
  EXPECT_NEAR(clipped.per_token_us(), 40.0, 3.0);
  EXPECT_NEAR(clipped.fixed_us(), 120.0, 10.0);
}

}  // namespace
}  // namespace pagoda
