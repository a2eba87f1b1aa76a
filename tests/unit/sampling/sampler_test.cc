// Tests for Sampler (src/sampling/sampler.h): greedy, seeding, each filter, the empirical distribution, and
// the exact effect of each penalty on small logit vectors.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

namespace pagoda {
namespace {

std::vector<float> kLogits() { return {0.5f, 2.0f, -1.0f, 1.5f, 0.0f, 1.9f}; }  // argmax 1

SamplingParams params_with(float temperature, uint64_t seed = 42) {
  SamplingParams params;
  params.temperature = temperature;
  params.seed = seed;
  return params;
}

TokenId sample_once(Sampler& sampler, std::vector<float> logits) { return sampler.sample(logits, {}, {}); }

std::vector<TokenId> draw_sequence(const SamplingParams& params, int num_draws) {
  Sampler sampler(params);
  std::vector<TokenId> tokens;
  for (int i = 0; i < num_draws; ++i) tokens.push_back(sample_once(sampler, kLogits()));
  return tokens;
}

TEST(SamplerTest, GreedyPicksArgmax) {
  Sampler sampler(params_with(0.0f));
  EXPECT_EQ(sample_once(sampler, kLogits()), 1);
  EXPECT_EQ(sample_once(sampler, {-5.0f, -3.0f, -4.0f}), 1);
  EXPECT_EQ(sample_once(sampler, {7.0f}), 0);
}

TEST(SamplerTest, LogitBiasIsAddedBeforeGreedyAndSampling) {
  SamplingParams p = params_with(0.0f);
  p.logit_bias = {{2, 3.5f}};  // -1 + 3.5 = 2.5 > 2.0
  Sampler greedy(p);
  EXPECT_EQ(sample_once(greedy, kLogits()), 2);
  p.logit_bias = {{1, -100.0f}};  // the argmax banned: the next best, 1.9, wins
  Sampler banned(p);
  EXPECT_EQ(sample_once(banned, kLogits()), 5);
  // +100 at temperature 1: every draw of 200 is that token (e^-98 of the mass is left to the others).
  SamplingParams hot = params_with(1.0f, 9);
  hot.logit_bias = {{4, 100.0f}};
  Sampler forced(hot);
  for (int i = 0; i < 200; ++i) ASSERT_EQ(sample_once(forced, kLogits()), 4);
  // A masked token (-infinity) stays masked whatever its bias.
  std::vector<float> masked = kLogits();
  masked[0] = -INFINITY;
  SamplingParams lift = params_with(1.0f, 1);
  lift.logit_bias = {{0, 100.0f}};
  Sampler lifted(lift);
  for (int i = 0; i < 50; ++i) ASSERT_NE(sample_once(lifted, masked), 0);
}

TEST(SamplerTest, GreedyTiesPickTheLowestId) {
  Sampler sampler(params_with(0.0f));
  EXPECT_EQ(sample_once(sampler, {1.0f, 3.0f, 3.0f, 3.0f}), 1);
  EXPECT_EQ(sample_once(sampler, {std::nanf(""), 1.0f, 1.0f}), 1);  // NaN never wins
}

// The greedy pick against its definition (the first index of the largest non-NaN logit, 0 when there is none) on
// rows of every length around the sampler's 16 lanes, with many ties, NaNs and -infinity.
TEST(SamplerTest, GreedyIsTheFirstLargestLogitOnRowsWithTiesNanAndInfinity) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> value(-3, 3), kind(0, 9);
  Sampler sampler(params_with(0.0f));
  for (int length : {1, 2, 15, 16, 17, 31, 32, 33, 47, 100, 512, 1001}) {
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<float> logits(static_cast<size_t>(length), 0.0f);
      for (float& logit : logits) {
        const int k = kind(rng);
        logit = k == 0 ? std::nanf("") : k == 1 ? -INFINITY : float(value(rng));
      }
      if (trial % 7 == 0)  // rows with no finite logit
        for (float& logit : logits) logit = trial % 2 ? -INFINITY : std::nanf("");
      if (trial % 11 == 0) logits[size_t(length - 1)] = INFINITY;
      TokenId expected = 0;  // the definition, one logit at a time
      float best = -INFINITY;
      for (int i = 0; i < length; ++i) {
        if (logits[size_t(i)] > best) {
          best = logits[size_t(i)];
          expected = i;
        }
      }
      ASSERT_EQ(sample_once(sampler, logits), expected) << "length " << length << ", trial " << trial;
    }
  }
}

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedsDiffer) {
  const std::vector<TokenId> a = draw_sequence(params_with(1.0f, 7), 200);
  const std::vector<TokenId> b = draw_sequence(params_with(1.0f, 7), 200);
  const std::vector<TokenId> c = draw_sequence(params_with(1.0f, 8), 200);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(SamplerTest, UnseededSamplersDiffer) {
  SamplingParams params;
  const std::vector<TokenId> a = draw_sequence(params, 200);
  const std::vector<TokenId> b = draw_sequence(params, 200);
  EXPECT_NE(a, b);
}

TEST(SamplerTest, TopKOneIsGreedy) {
  SamplingParams params = params_with(1.5f);
  params.top_k = 1;
  Sampler sampler(params);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample_once(sampler, kLogits()), 1);
}

TEST(SamplerTest, TopKKeepsOnlyTheKMostLikely) {
  SamplingParams params = params_with(5.0f);  // hot, so every token would show up without top-k
  params.top_k = 3;
  Sampler sampler(params);
  std::array<int, 6> hits{};
  for (int i = 0; i < 2000; ++i) ++hits[size_t(sample_once(sampler, kLogits()))];
  EXPECT_EQ(hits[0] + hits[2] + hits[4], 0);
  EXPECT_GT(hits[1], 0);
  EXPECT_GT(hits[3], 0);
  EXPECT_GT(hits[5], 0);
}

TEST(SamplerTest, TinyTopPIsGreedy) {
  SamplingParams params = params_with(1.0f);
  params.top_p = 1e-6f;
  Sampler sampler(params);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample_once(sampler, kLogits()), 1);
}

TEST(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // Probabilities 0.5, 0.3, 0.15, 0.05: top_p 0.75 keeps exactly the first two (0.5 + 0.3 >= 0.75).
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplingParams params = params_with(1.0f);
  params.top_p = 0.75f;
  Sampler sampler(params);
  std::array<int, 4> hits{};
  for (int i = 0; i < 4000; ++i) ++hits[size_t(sample_once(sampler, logits))];
  EXPECT_EQ(hits[2] + hits[3], 0);
  EXPECT_NEAR(hits[0] / 4000.0, 0.5 / 0.8, 0.03);
}

TEST(SamplerTest, MinPFiltersTokensBelowTheThreshold) {
  // Probabilities 0.5, 0.3, 0.15, 0.05; min_p 0.25 drops p < 0.125: token 3 only.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  SamplingParams params = params_with(1.0f);
  params.min_p = 0.25f;
  Sampler sampler(params);
  std::array<int, 4> hits{};
  for (int i = 0; i < 4000; ++i) ++hits[size_t(sample_once(sampler, logits))];
  EXPECT_EQ(hits[3], 0);
  EXPECT_GT(hits[2], 0);
  params.min_p = 1.0f;  // only the maximum survives
  Sampler strict(params);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample_once(strict, logits), 0);
}

std::array<double, 4> frequencies(const SamplingParams& params, const std::vector<float>& logits, int num_draws) {
  Sampler sampler(params);
  std::array<double, 4> freq{};
  for (int i = 0; i < num_draws; ++i) freq[size_t(sample_once(sampler, logits))] += 1.0 / num_draws;
  return freq;
}

TEST(SamplerTest, EmpiricalFrequenciesMatchTheDistribution) {
  const std::array<double, 4> probs = {0.1, 0.2, 0.3, 0.4};
  std::vector<float> logits;
  for (double p : probs) logits.push_back(float(std::log(p)) + 3.0f);  // a shift must not matter
  const std::array<double, 4> freq = frequencies(params_with(1.0f), logits, 20000);
  // 4 standard deviations of a binomial proportion at n = 20000 is at most 0.0142.
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(freq[i], probs[i], 0.0142) << "token " << i;
}

TEST(SamplerTest, TemperatureScalesTheDistribution) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 3.0f};
  for (float temperature : {0.5f, 2.0f}) {
    double expected[4], sum = 0;
    for (size_t i = 0; i < 4; ++i) sum += expected[i] = std::exp(logits[i] / temperature);
    const std::array<double, 4> freq = frequencies(params_with(temperature), logits, 20000);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(freq[i], expected[i] / sum, 0.0142) << "T " << temperature;
  }
  // Colder concentrates on the maximum, hotter spreads out.
  EXPECT_GT(frequencies(params_with(0.25f), logits, 5000)[3], frequencies(params_with(4.0f), logits, 5000)[3] + 0.4);
}

TEST(SamplerTest, TinyTemperatureDoesNotProduceNaN) {
  Sampler sampler(params_with(1e-30f));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(sample_once(sampler, kLogits()), 1);
}

TEST(SamplerTest, RepetitionPenaltyDividesPositiveMultipliesNegative) {
  SamplingParams params = params_with(0.0f);
  params.repetition_penalty = 2.0f;
  Sampler sampler(params);
  std::vector<float> logits = {4.0f, -1.0f, 3.0f, 0.5f, -2.0f};
  const std::vector<TokenId> prompt = {0, 1, 1};
  const std::vector<TokenId> output = {1, 4, 0};
  sampler.sample(logits, prompt, output);
  // Tokens 0, 1 and 4 appeared (some several times, in both prompt and output): each penalized exactly once.
  EXPECT_EQ(logits, (std::vector<float>{2.0f, -2.0f, 3.0f, 0.5f, -4.0f}));
}

TEST(SamplerTest, PresencePenaltyOncePerDistinctOutputToken) {
  SamplingParams params = params_with(0.0f);
  params.presence_penalty = 0.5f;
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<TokenId> prompt = {3};  // prompt tokens do not count for presence
  const std::vector<TokenId> output = {0, 2, 2, 2};
  sampler.sample(logits, prompt, output);
  EXPECT_EQ(logits, (std::vector<float>{0.5f, 1.0f, 0.5f, 1.0f}));
}

TEST(SamplerTest, FrequencyPenaltyTimesCount) {
  SamplingParams params = params_with(0.0f);
  params.frequency_penalty = 0.25f;
  params.presence_penalty = -1.0f;
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<TokenId> output = {0, 2, 2, 2, 0, 1};
  sampler.sample(logits, {}, output);
  // token 0: 1 - 2*0.25 + 1; token 1: 1 - 0.25 + 1; token 2: 1 - 3*0.25 + 1
  EXPECT_EQ(logits, (std::vector<float>{1.5f, 1.75f, 1.25f, 1.0f}));
}

TEST(SamplerTest, PenaltiesLeaveNoStateBetweenCalls) {
  SamplingParams params = params_with(0.0f);
  params.repetition_penalty = 2.0f;
  params.frequency_penalty = 1.0f;
  Sampler sampler(params);
  std::vector<float> first = {2.0f, 2.0f, 2.0f};
  sampler.sample(first, std::vector<TokenId>{0}, std::vector<TokenId>{1, 1});
  std::vector<float> second = {2.0f, 2.0f, 2.0f};
  sampler.sample(second, std::vector<TokenId>{0}, std::vector<TokenId>{1, 1});
  EXPECT_EQ(first, second);
  EXPECT_EQ(first, (std::vector<float>{1.0f, -1.0f, 2.0f}));
}

TEST(SamplerTest, PenaltiesSteerGreedy) {
  SamplingParams params = params_with(0.0f);
  params.frequency_penalty = 2.0f;
  Sampler sampler(params);
  std::vector<float> logits = {3.0f, 2.0f};
  EXPECT_EQ(sampler.sample(logits, {}, std::vector<TokenId>{0}), 1);
}

#ifndef __SANITIZE_ADDRESS__
// Counts global allocations so the test below can check the "no allocation after the first call" promise.
// The replacement pair is malloc/free; GCC cannot see that the inlined std::allocator calls go through it.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
int g_num_allocations = 0;
}  // namespace
}  // namespace pagoda

void* operator new(size_t size) {
  ++pagoda::g_num_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace pagoda {
namespace {

TEST(SamplerTest, NoAllocationAfterTheFirstCall) {
  SamplingParams params = params_with(0.8f);
  params.top_k = 3;
  params.top_p = 0.9f;
  params.min_p = 0.05f;
  params.repetition_penalty = 1.1f;
  params.presence_penalty = 0.3f;
  params.frequency_penalty = 0.2f;
  Sampler sampler(params);
  std::vector<float> logits(1000, 0.0f);
  const std::vector<TokenId> prompt = {1, 2, 3};
  const std::vector<TokenId> output = {4, 4, 5};
  const int before_first = g_num_allocations;
  sampler.sample(logits, prompt, output);
  const int before = g_num_allocations;
  EXPECT_GT(before, before_first);  // the scratch buffers are sized on the first call (and the hook works)
  for (int i = 0; i < 50; ++i) sampler.sample(logits, prompt, output);
  EXPECT_EQ(g_num_allocations, before);
}
#endif

}  // namespace
}  // namespace pagoda
