// Draft length by expected tokens per unit of step cost; the acceptance and step-cost estimators behind it.
#include "spec/draft_length.h"

#include <algorithm>

namespace pagoda {

int32_t best_num_drafts(double acceptance_rate, double marginal_cost, int32_t max_drafts) {
  const double a = std::clamp(acceptance_rate, 0.0, 1.0);
  const double c = std::max(0.0, marginal_cost);
  int32_t best_k = 0;
  double best = 1.0;  // k = 0: one token for one step
  double expected = 1.0, power = 1.0;
  for (int32_t k = 1; k <= max_drafts; ++k) {
    power *= a;
    expected += power;
    const double value = expected / (1.0 + c * double(k));
    if (value > best * (1.0 + 1e-9)) {
      best = value;
      best_k = k;
    }
  }
  return best_k;
}

void AcceptanceEstimate::record(int32_t num_drafts, int32_t num_accepted) {
  if (num_drafts <= 0) return;
  accepted_ = accepted_ * kDecay + double(num_accepted);
  rejected_ = rejected_ * kDecay + (num_accepted < num_drafts ? 1.0 : 0.0);
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
