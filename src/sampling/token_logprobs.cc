// compute_token_logprobs: a stable log-sum-exp and a partial sort for the alternatives.
#include "sampling/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"

namespace pagoda {

TokenLogprobs compute_token_logprobs(std::span<const float> logits, TokenId token, int32_t num_top) {
  PAGODA_CHECK(token >= 0 && size_t(token) < logits.size(), "token {} is outside the vocabulary of {}", token,
               logits.size());
  auto value = [&](size_t i) {
    const float v = logits[i];
    return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v;
  };
  float max = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < logits.size(); ++i) max = std::max(max, value(i));
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) sum += std::exp(double(value(i)) - double(max));
  const double log_z = double(max) + std::log(sum);
  TokenLogprobs out;
  out.token = token;
  const float token_value = value(size_t(token));
  out.logprob = float(double(token_value) - log_z);
  int32_t num_more_likely = 0;
  for (size_t i = 0; i < logits.size(); ++i) num_more_likely += value(i) > token_value ? 1 : 0;
  out.rank = 1 + num_more_likely;
  const size_t k = std::min<size_t>(size_t(std::max(num_top, 0)), logits.size());
  if (k > 0) {
    std::vector<std::pair<float, TokenId>> all(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) all[i] = {value(i), TokenId(i)};
    auto more_likely = [](const auto& a, const auto& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end(), more_likely);
    out.top.reserve(k);
    for (size_t i = 0; i < k; ++i) out.top.emplace_back(all[i].second, float(double(all[i].first) - log_z));
  }
  return out;
}

}  // namespace pagoda
