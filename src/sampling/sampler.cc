// Sampler: penalties, greedy argmax, and temperature / top-k / top-p / min-p sampling over one logits row.
// After the first call for a given vocabulary size nothing here allocates: candidates_ keeps its capacity and
// counts_ is returned to all zeros before each call ends.
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace pagoda {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t initial_seed(const std::optional<uint64_t>& seed) {
  if (seed) return *seed;
  std::random_device device;  // 32 bits per call
  return (uint64_t(device()) << 32) ^ uint64_t(device());
}

// A NaN logit (a broken model) must not poison comparisons: it becomes "never chosen".
float sanitize(float logit) { return std::isnan(logit) ? kNegInf : logit; }

// Higher value first, lower token id first on ties: a strict total order, so every sort below has exactly one
// result and the draws do not depend on the standard library's sort algorithm.
bool more_likely(const std::pair<float, TokenId>& a, const std::pair<float, TokenId>& b) {
  return a.first > b.first || (a.first == b.first && a.second < b.second);
}

void check_token(TokenId token, size_t vocab_size) {
  PAGODA_CHECK(token >= 0 && size_t(token) < vocab_size, "penalty token id {} is outside the vocabulary of {}", token,
               vocab_size);
}

// The lowest id of the largest logit; NaN never wins; a row of only -infinity and NaN gives 0. Sixteen lanes, each
// the first maximum of the ids it sees (strict >), so the loop has no branch and compiles to vector max and blend
// (every greedy or verified row passes here, and this is much faster than a branching scan at the build's baseline
// ISA); the lanes' maxima then merge, the lowest id on a tie.
TokenId argmax(std::span<const float> logits) {
  constexpr int32_t kLanes = 16;
  const int32_t n = int32_t(logits.size());
  const float* x = logits.data();
  float lane_max[kLanes];
  int32_t lane_id[kLanes];
  for (int32_t j = 0; j < kLanes; ++j) {
    lane_max[j] = kNegInf;
    lane_id[j] = 0;
  }
  int32_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int32_t j = 0; j < kLanes; ++j) {
      const bool larger = x[i + j] > lane_max[j];
      lane_max[j] = larger ? x[i + j] : lane_max[j];
      lane_id[j] = larger ? i + j : lane_id[j];
    }
  }
  float best = kNegInf;
  TokenId best_id = 0;
  for (int32_t j = 0; j < kLanes; ++j) {
    if (lane_max[j] > best || (lane_max[j] == best && best > kNegInf && lane_id[j] < best_id)) {
      best = lane_max[j];
      best_id = lane_id[j];
    }
  }
  for (; i < n; ++i) {
    if (x[i] > best) {
      best = x[i];
      best_id = i;
    }
  }
  return best_id;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(initial_seed(params.seed)) {}

TokenId Sampler::sample(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                        std::span<const TokenId> output_tokens) {
  PAGODA_CHECK(!logits.empty(), "sample() needs a non-empty logits row");
  apply_penalties(logits, prompt_tokens, output_tokens);
  if (params_.is_greedy()) return argmax(logits);
  build_candidates(logits);
  return draw(-1);
}

Sampler::DraftVerdict Sampler::verify_draft(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                                            std::span<const TokenId> output_tokens, TokenId draft) {
  PAGODA_CHECK(!logits.empty(), "verify_draft() needs a non-empty logits row");
  PAGODA_CHECK(draft >= 0 && size_t(draft) < logits.size(), "draft token {} is outside the vocabulary of {}", draft,
               logits.size());
  apply_penalties(logits, prompt_tokens, output_tokens);
  if (params_.is_greedy()) {
    const TokenId best = argmax(logits);
    return DraftVerdict{best, best == draft};
  }
  build_candidates(logits);
  double total = 0.0, draft_mass = 0.0;
  for (const auto& candidate : candidates_) {
    total += candidate.first;
    if (candidate.second == draft) draft_mass = candidate.first;
  }
  // Accept with probability p(draft): u < p(draft) (strict, so a token outside the kept set never passes).
  if (uniform() * total < draft_mass) return DraftVerdict{draft, true};
  return DraftVerdict{draw(draft), false};
}

void Sampler::apply_penalties(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                              std::span<const TokenId> output_tokens) {
  const size_t vocab_size = logits.size();
  const bool has_repetition = params_.repetition_penalty != 1.0f;
  const bool has_output_penalty = params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if ((has_repetition || has_output_penalty) && counts_.size() < vocab_size) counts_.resize(vocab_size, 0);

  // logit_bias, as OpenAI applies it: added to the raw logit. A token masked to -infinity (a grammar) stays so.
  for (const auto& [token, bias] : params_.logit_bias) {
    PAGODA_CHECK(token >= 0 && size_t(token) < vocab_size, "logit_bias token id {} is outside the vocabulary of {}",
                 token, vocab_size);
    logits[size_t(token)] += bias;
  }

  if (has_repetition) {
    // counts_ marks tokens already penalized (a token in both prompt and output is penalized once), then is
    // cleared again by walking the same tokens, which costs O(tokens) rather than O(vocab).
    const float penalty = params_.repetition_penalty;
    auto penalize = [&](std::span<const TokenId> tokens) {
      for (TokenId token : tokens) {
        check_token(token, vocab_size);
        if (counts_[token] != 0) continue;
        counts_[token] = 1;
        float& logit = logits[token];
        logit = logit > 0.0f ? logit / penalty : logit * penalty;
      }
    };
    penalize(prompt_tokens);
    penalize(output_tokens);
    for (TokenId token : prompt_tokens) counts_[token] = 0;
    for (TokenId token : output_tokens) counts_[token] = 0;
  }

  if (has_output_penalty) {
    for (TokenId token : output_tokens) {
      check_token(token, vocab_size);
      ++counts_[token];
    }
    // The first visit of each distinct token applies both penalties and zeroes its count, so later visits of
    // the same token do nothing and counts_ ends all zeros.
    for (TokenId token : output_tokens) {
      const int32_t count = counts_[token];
      if (count == 0) continue;
      logits[token] -= params_.frequency_penalty * float(count) + params_.presence_penalty;
      counts_[token] = 0;
    }
  }
}

void Sampler::build_candidates(std::span<const float> logits) {
  const size_t vocab_size = logits.size();
  // Scaled logits shifted by the maximum: (logit - max) / temperature. Softmax is unchanged by the shift, and
  // subtracting before dividing keeps a tiny temperature from overflowing to inf - inf = NaN.
  float max_logit = kNegInf;
  for (float logit : logits) max_logit = std::max(max_logit, sanitize(logit));
  const float temperature = params_.temperature;
  candidates_.clear();
  candidates_.reserve(vocab_size);
  for (size_t i = 0; i < vocab_size; ++i) {
    const float logit = sanitize(logits[i]);
    candidates_.emplace_back(logit == max_logit ? 0.0f : (logit - max_logit) / temperature, TokenId(i));
  }

  bool sorted = false;
  if (params_.top_k > 0 && size_t(params_.top_k) < vocab_size) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.end(), more_likely);
    candidates_.resize(size_t(params_.top_k));
    sorted = true;
  }

  // Softmax numerators in place of the scaled logits; the order between candidates is unchanged.
  double sum = 0.0;
  for (auto& candidate : candidates_) {
    candidate.first = std::exp(candidate.first);
    sum += candidate.first;
  }

  if (params_.top_p < 1.0f) {
    if (!sorted) std::sort(candidates_.begin(), candidates_.end(), more_likely);
    sorted = true;
    const double target = double(params_.top_p) * sum;
    double cumulative = 0.0;
    size_t num_kept = candidates_.size();
    for (size_t i = 0; i < candidates_.size(); ++i) {
      cumulative += candidates_[i].first;
      if (cumulative >= target) {
        num_kept = i + 1;  // at least one: the most likely token
        break;
      }
    }
    candidates_.resize(num_kept);
  }

  if (params_.min_p > 0.0f) {
    float max_prob = 0.0f;
    if (sorted) {
      max_prob = candidates_.front().first;
    } else {
      for (const auto& candidate : candidates_) max_prob = std::max(max_prob, candidate.first);
    }
    // Relative to the maximum, so the normalization does not matter; the maximum itself always survives.
    const float threshold = params_.min_p * max_prob;
    auto kept_end = std::remove_if(candidates_.begin(), candidates_.end(),
                                   [threshold](const auto& candidate) { return candidate.first < threshold; });
    candidates_.erase(kept_end, candidates_.end());
  }
}

double Sampler::uniform() { return double(rng_() >> 11) * 0x1p-53; }

TokenId Sampler::draw(TokenId excluded) {
  // Draw: a uniform double in [0, 1) from the top 53 bits of the generator's raw output (the same on every
  // standard library, unlike std::uniform_real_distribution), scaled by the kept mass.
  double total = 0.0;
  for (const auto& candidate : candidates_)
    if (candidate.second != excluded) total += candidate.first;
  const double target = uniform() * total;
  double cumulative = 0.0;
  for (const auto& candidate : candidates_) {
    if (candidate.second == excluded) continue;
    cumulative += candidate.first;
    if (cumulative > target) return candidate.second;  // strict: a zero-probability token is never drawn
  }
  // Only when every kept probability is 0 (cannot happen for sample(): the maximum has numerator exp(0) = 1;
  // verify_draft excludes a token only after it failed a test it passes with probability 1 when it is alone).
  for (const auto& candidate : candidates_)
    if (candidate.second != excluded) return candidate.second;
  return candidates_.front().second;
}

}  // namespace pagoda
