// Per-token scoring arithmetic of the quality evaluation: log-softmax of a logits row, the negative
// log-likelihood of one token, the KL divergence between two distributions, and a running mean with its
// standard error. Pure math on spans; knows nothing of models or text.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

namespace pagoda::eval {

// out[i] = logits[i] - log(sum_j exp(logits[j])), computed in double around the max for stability.
void log_softmax(std::span<const float> logits, std::span<double> out);

// KL(P || Q) in nats for log-probabilities `log_p` and `log_q` of one vocabulary; terms with log_p at or below
// `min_log_p` are left out (llama-perplexity's saved rows clip their tail, so its KL skips log p <= -16).
double kl_divergence(std::span<const double> log_p, std::span<const double> log_q,
                     double min_log_p = -std::numeric_limits<double>::infinity());

// Index of the largest value (the first one on ties).
int32_t argmax(std::span<const double> values);

// Mean of a stream of samples with the standard error of that mean (sample variance / n).
class RunningMean {
 public:
  void add(double x);
  int64_t count() const { return n_; }
  double mean() const { return n_ > 0 ? sum_ / double(n_) : 0.0; }
  // 0 with fewer than two samples.
  double standard_error() const;

 private:
  int64_t n_ = 0;
  double sum_ = 0.0;
  double sum_sq_ = 0.0;
};

}  // namespace pagoda::eval
