// Tests for the scoring arithmetic (src/eval/token_stats.h) against values worked out by hand.
#include "eval/token_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace pagoda::eval {
namespace {

TEST(TokenStats, LogSoftmaxIsNormalisedAndShiftInvariant) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, -1.0f};
  std::vector<double> a(4), b(4);
  log_softmax(logits, a);
  double sum = 0.0;
  for (double v : a) sum += std::exp(v);
  EXPECT_NEAR(sum, 1.0, 1e-12);
  // log p(3) = 3 - log(e + e^2 + e^3 + e^-1)
  EXPECT_NEAR(a[2], 3.0 - std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(-1.0)), 1e-12);
  // Large logits (that would overflow exp in float) give the same answer shifted by 1000.
  std::vector<float> shifted;
  for (float v : logits) shifted.push_back(v + 1000.0f);
  log_softmax(shifted, b);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(a[i], b[i], 1e-4);
}

TEST(TokenStats, KlDivergenceOfKnownDistributions) {
  std::vector<double> p = {std::log(0.5), std::log(0.5)}, q = {std::log(0.9), std::log(0.1)};
  EXPECT_EQ(kl_divergence(p, p), 0.0);
  // KL(p || q) = 0.5 ln(0.5/0.9) + 0.5 ln(0.5/0.1)
  EXPECT_NEAR(kl_divergence(p, q), 0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1), 1e-12);
  EXPECT_GT(kl_divergence(q, p), 0.0);
  // A zero-probability token of P contributes nothing.
  std::vector<double> certain = {0.0, -INFINITY};
  EXPECT_NEAR(kl_divergence(certain, q), -std::log(0.9), 1e-12);
}

TEST(TokenStats, ArgmaxTakesTheFirstOfTies) {
  EXPECT_EQ(argmax(std::vector<double>{1.0, 3.0, 3.0, 2.0}), 1);
  EXPECT_EQ(argmax(std::vector<double>{-5.0}), 0);
}

TEST(TokenStats, RunningMeanAndItsStandardError) {
  RunningMean m;
  EXPECT_EQ(m.mean(), 0.0);
  EXPECT_EQ(m.standard_error(), 0.0);
  m.add(2.0);
  EXPECT_EQ(m.standard_error(), 0.0);
  for (double x : {4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0}) m.add(x);
  EXPECT_EQ(m.count(), 8);
  EXPECT_DOUBLE_EQ(m.mean(), 5.0);
  // Sample variance of {2,4,4,4,5,5,7,9} is 32/7; the standard error is sqrt(32/7/8).
  EXPECT_NEAR(m.standard_error(), std::sqrt(32.0 / 7.0 / 8.0), 1e-12);
}

}  // namespace
}  // namespace pagoda::eval
