// Draft length by expected tokens per unit of step cost; the acceptance and step-cost estimators behind it.
#include "spec/draft_length.h"

#include <algorithm>

namespace pagoda {

namespace {

// argmax over k in [0, max_drafts] of E(k) / (1 + marginal_cost * k), E(k) = 1 + c(1) + c(1) c(2) + ... with c(k) the
// chance of draft k in [0, 1]; the smallest k on ties. Both forms of best_num_drafts.
template <class Chance>
int32_t best_length(int32_t max_drafts, double marginal_cost, Chance chance) {
  const double c = std::max(0.0, marginal_cost);
  int32_t best_k = 0;
  double best = 1.0;  // k = 0: one token for one step
  double expected = 1.0, power = 1.0;
  for (int32_t k = 1; k <= max_drafts; ++k) {
    power *= chance(k);
    expected += power;
    const double value = expected / (1.0 + c * double(k));
    if (value > best * (1.0 + 1e-9)) {
      best = value;
      best_k = k;
    }
  }
  return best_k;
}

}  // namespace

int32_t best_num_drafts(double acceptance_rate, double marginal_cost, int32_t max_drafts) {
  const double a = std::clamp(acceptance_rate, 0.0, 1.0);
  return best_length(max_drafts, marginal_cost, [a](int32_t) { return a; });
}

int32_t best_num_drafts(std::span<const float> chances, double marginal_cost) {
  return best_length(int32_t(chances.size()), marginal_cost,
                     [chances](int32_t k) { return std::clamp(double(chances[size_t(k - 1)]), 0.0, 1.0); });
}

void AcceptanceEstimate::record(int32_t num_drafts, int32_t num_accepted) {
  if (num_drafts <= 0) return;
  accepted_ = accepted_ * kDecay + double(num_accepted);
  rejected_ = rejected_ * kDecay + (num_accepted < num_drafts ? 1.0 : 0.0);
}

double DraftLengthChooser::chance_factor() const {
  return std::clamp((observed_ + kCalibrationPriorDrafts) / (expected_ + kCalibrationPriorDrafts), 0.0, 2.0);
}

int32_t DraftLengthChooser::worth_asking(double marginal_cost, int32_t max_drafts) const {
  return std::max(1, best_num_drafts(rate_.rate(), marginal_cost, max_drafts));
}

int32_t DraftLengthChooser::choose(std::span<const TokenId> drafts, std::span<const float> chances,
                                   double marginal_cost) {
  chosen_chances_.clear();
  shadow_ = -1;
  shadow_chance_ = -1.0f;
  if (drafts.empty()) return 0;
  const bool with_chances = chances.size() == drafts.size();
  int32_t k = 0;
  double first_chance = 0.0;
  if (with_chances) {
    const double factor = chance_factor();
    std::vector<float>& scaled = chosen_chances_;  // scratch until k is known
    for (float c : chances) scaled.push_back(float(std::min(1.0, double(c) * factor)));
    k = best_num_drafts(scaled, marginal_cost);
    first_chance = scaled.front();
    chosen_chances_.assign(chances.begin(), chances.begin() + k);
  } else {
    k = best_num_drafts(rate_.rate(), marginal_cost, int32_t(drafts.size()));
    first_chance = rate_.rate();
  }
  if (k == 0 && ++steps_off_ >= kExploreEvery && first_chance >= 0.5) {
    k = 1;
    if (with_chances) chosen_chances_.assign(chances.begin(), chances.begin() + 1);
  }
  if (k > 0) {
    steps_off_ = 0;
  } else {
    shadow_ = drafts.front();
    shadow_chance_ = with_chances ? chances.front() : -1.0f;
  }
  return k;
}

void DraftLengthChooser::record_chances(std::span<const float> chances, int32_t num_accepted) {
  double expected = 0.0, power = 1.0;
  for (float c : chances) {
    power *= std::clamp(double(c), 0.0, 1.0);
    expected += power;
  }
  observed_ = observed_ * kCalibrationDecay + double(num_accepted);
  expected_ = expected_ * kCalibrationDecay + expected;
}

void DraftLengthChooser::record_verified(int32_t num_drafts, int32_t num_accepted) {
  if (num_drafts > 0 && int32_t(chosen_chances_.size()) == num_drafts)
    record_chances(chosen_chances_, num_accepted);
  else
    rate_.record(num_drafts, num_accepted);
  forget_step();
}

void DraftLengthChooser::record_sampled(TokenId token) {
  if (shadow_ >= 0) {
    if (shadow_chance_ >= 0.0f) {
      const float chance = shadow_chance_;
      record_chances(std::span<const float>(&chance, 1), token == shadow_ ? 1 : 0);
    } else {
      rate_.record(1, token == shadow_ ? 1 : 0);
    }
  }
  forget_step();
}

void DraftLengthChooser::forget_step() {
  chosen_chances_.clear();
  shadow_ = -1;
  shadow_chance_ = -1.0f;
}

void StepCostModel::record(int32_t num_tokens, double duration_us) {
  if (num_tokens <= 0 || !(duration_us > 0.0)) return;
  const double n = double(num_tokens);
  if (fitted_ && max_over_fit_ > 0.0)
    duration_us = std::min(duration_us, max_over_fit_ * (fixed_us_ + per_token_us_ * n));
  w_ = w_ * decay_ + 1.0;
  sn_ = sn_ * decay_ + n;
  st_ = st_ * decay_ + duration_us;
  snn_ = snn_ * decay_ + n * n;
  snt_ = snt_ * decay_ + n * duration_us;
  // Least squares t = fixed + per_token * n, once the sizes seen spread enough to tell the terms apart (a
  // standard deviation of 0.2 tokens: one step in 16 a token larger, as the scheduler's exploration gives).
  const double var = snn_ * w_ - sn_ * sn_;
  if (var <= 0.04 * w_ * w_) return;  // keep the last fit
  const double slope = (snt_ * w_ - sn_ * st_) / var;
  const double intercept = (st_ - slope * sn_) / w_;
  if (!(slope > 0.0)) return;
  per_token_us_ = slope;
  fixed_us_ = std::max(0.0, intercept);
  fitted_ = true;
}

double StepCostModel::marginal_cost(int32_t num_seqs) const {
  if (!fitted_) return fallback_marginal_cost_;
  const double share = fixed_us_ / double(std::max(1, num_seqs)) + per_token_us_;
  return per_token_us_ / share;
}

}  // namespace pagoda
