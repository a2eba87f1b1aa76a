// Log-softmax, KL divergence, argmax and the running mean.
#include "eval/token_stats.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace pagoda::eval {

void log_softmax(std::span<const float> logits, std::span<double> out) {
  PAGODA_CHECK(out.size() == logits.size() && !logits.empty());
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(double(v) - max);
  const double log_sum = max + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_sum;
}

double kl_divergence(std::span<const double> log_p, std::span<const double> log_q, double min_log_p) {
  PAGODA_CHECK(log_p.size() == log_q.size());
  double kl = 0.0;
  for (size_t i = 0; i < log_p.size(); ++i) {
    if (log_p[i] <= min_log_p) continue;
    const double p = std::exp(log_p[i]);
    if (p > 0.0) kl += p * (log_p[i] - log_q[i]);
  }
  // Rounding can leave a tiny negative sum for identical distributions; KL is never below zero.
  return std::max(kl, 0.0);
}

int32_t argmax(std::span<const double> values) {
  PAGODA_CHECK(!values.empty());
  return int32_t(std::max_element(values.begin(), values.end()) - values.begin());
}

void RunningMean::add(double x) {
  ++n_;
  sum_ += x;
  sum_sq_ += x * x;
}

double RunningMean::standard_error() const {
  if (n_ < 2) return 0.0;
  const double m = mean();
  const double variance = std::max(0.0, (sum_sq_ / double(n_) - m * m) * double(n_) / double(n_ - 1));
  return std::sqrt(variance / double(n_));
}

}  // namespace pagoda::eval
