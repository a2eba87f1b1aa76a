// Sampler::verify_draft (speculative decoding's rejection rule for a draft proposed with certainty): greedy
// accepts exactly the argmax; sampled, the verified token follows the sampler's own distribution whatever the
// draft (chi-square against the exact probabilities on a 6-token vocabulary, fixed seeds), the draft is
// accepted with probability p(draft), and a chain of two drafts verified position by position (as the engine
// does, stopping at the first rejection) gives the joint distribution of two plain samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <vector>

#include "sampling/sampler.h"

namespace pagoda {
namespace {

constexpr int kVocab = 6;
std::vector<float> row_a() { return {0.5f, 2.0f, -1.0f, 1.5f, 0.0f, 1.9f}; }
std::vector<float> row_b() { return {1.0f, -0.5f, 0.3f, 2.2f, 0.8f, -2.0f}; }

SamplingParams sampled(float temperature, int32_t top_k, uint64_t seed) {
  SamplingParams p;
  p.temperature = temperature;
  p.top_k = top_k;
  p.seed = seed;
  return p;
}

// The exact distribution: softmax(logits / T) over the top_k most likely (0: all).
std::array<double, kVocab> exact(const std::vector<float>& logits, float temperature, int32_t top_k) {
  std::array<double, kVocab> p{};
  std::vector<float> sorted = logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const float cut = top_k > 0 ? sorted[size_t(top_k - 1)] : -1e30f;
  double sum = 0.0;
  for (int i = 0; i < kVocab; ++i)
    if (logits[size_t(i)] >= cut) sum += p[size_t(i)] = std::exp(double(logits[size_t(i)]) / temperature);
  for (double& x : p) x /= sum;
  return p;
}

// Pearson's chi-square of observed counts against expected probabilities (cells with p = 0 must be empty).
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double x2 = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "cell " << i << " has probability 0";
      continue;
    }
    const double e = p[i] * double(n);
    x2 += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
  }
  return x2;
}

TEST(DraftVerification, GreedyAcceptsExactlyTheArgmax) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Sampler s(greedy);
  for (TokenId draft = 0; draft < kVocab; ++draft) {
    std::vector<float> row = row_a();
    const Sampler::DraftVerdict v = s.verify_draft(row, {}, {}, draft);
    EXPECT_EQ(v.token, 1);
    EXPECT_EQ(v.accepted, draft == 1);
  }
}

TEST(DraftVerification, TheVerifiedTokenFollowsTheSamplersDistributionWhateverTheDraft) {
  constexpr int64_t kDraws = 60000;
  // Chi-square, 5 degrees of freedom (4 with top-k 5): 20.5 is its 0.999 quantile (18.5 for 4). Fixed seeds make
  // the test deterministic; the bound only says the seeds are not special.
  for (int32_t top_k : {0, 5}) {
    const std::array<double, kVocab> p = exact(row_a(), 0.8f, top_k);
    for (TokenId draft : {1, 3, 2}) {  // the likeliest, a middling one, the least likely (dropped by top-k 5)
      Sampler s(sampled(0.8f, top_k, 1000 + uint64_t(draft)));
      std::vector<int64_t> counts(kVocab, 0);
      int64_t num_accepted = 0;
      for (int64_t i = 0; i < kDraws; ++i) {
        std::vector<float> row = row_a();
        const Sampler::DraftVerdict v = s.verify_draft(row, {}, {}, draft);
        ASSERT_TRUE(v.token >= 0 && v.token < kVocab);
        ASSERT_EQ(v.accepted, v.token == draft) << "a rejected draft is never the replacement";
        ++counts[size_t(v.token)];
        num_accepted += v.accepted ? 1 : 0;
      }
      const double x2 = chi_square(counts, std::vector<double>(p.begin(), p.end()), kDraws);
      EXPECT_LT(x2, top_k > 0 ? 18.5 : 20.5) << "top_k " << top_k << " draft " << draft;
      // Acceptance rate p(draft), within 4 standard errors.
      const double pd = p[size_t(draft)];
      const double se = std::sqrt(pd * (1.0 - pd) / double(kDraws));
      EXPECT_NEAR(double(num_accepted) / double(kDraws), pd, 4.0 * se + 1e-12)
          << "top_k " << top_k << " draft " << draft;
    }
  }
}

TEST(DraftVerification, TwoDraftsVerifiedInOrderGiveTheJointOfTwoSamples) {
  // Position 1 uses row_a, position 2 row_b (a model whose rows do not depend on the context). The engine
  // verifies draft 2 only when draft 1 was accepted; otherwise the next step samples position 2 plainly.
  constexpr int64_t kDraws = 80000;
  const std::array<double, kVocab> p1 = exact(row_a(), 1.0f, 0), p2 = exact(row_b(), 1.0f, 0);
  Sampler s(sampled(1.0f, 0, 7));
  std::vector<int64_t> counts(kVocab * kVocab, 0);
  for (int64_t i = 0; i < kDraws; ++i) {
    std::vector<float> r1 = row_a(), r2 = row_b();
    const Sampler::DraftVerdict v1 = s.verify_draft(r1, {}, {}, 5);
    const TokenId t2 = v1.accepted ? s.verify_draft(r2, {}, {}, 0).token : s.sample(r2, {}, {});
    ++counts[size_t(v1.token * kVocab + t2)];
  }
  std::vector<double> joint;
  for (int a = 0; a < kVocab; ++a)
    for (int b = 0; b < kVocab; ++b) joint.push_back(p1[size_t(a)] * p2[size_t(b)]);
  // 35 degrees of freedom: 66.6 is the 0.999 quantile.
  EXPECT_LT(chi_square(counts, joint, kDraws), 66.6);
}

TEST(DraftVerification, PenaltiesApplyAsInSample) {
  // A repetition penalty that makes the argmax lose: verify_draft sees the penalized row, as sample() does.
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.repetition_penalty = 4.0f;
  Sampler s(greedy);
  const std::vector<TokenId> output{1};
  std::vector<float> row = row_a(), row2 = row_a();
  const TokenId plain = s.sample(row, {}, output);
  const Sampler::DraftVerdict v = s.verify_draft(row2, {}, output, plain);
  EXPECT_EQ(plain, 5);
  EXPECT_TRUE(v.accepted);
  EXPECT_EQ(v.token, 5);
}

}  // namespace
}  // namespace pagoda
