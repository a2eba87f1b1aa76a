// SamplingParams::validate: the one place the allowed ranges of sampling parameters are checked. Comparisons
// are written so that NaN fails every one of them.
#include "sampling/sampling_params.h"

#include <fmt/format.h>

#include <cmath>

namespace pagoda {

namespace {
constexpr size_t kMaxStopStrings = 16;
constexpr int32_t kMaxLogprobs = 20;
constexpr size_t kMaxLogitBias = 1024;  // vLLM and OpenAI take a few hundred at most
constexpr size_t kMaxStopTokenIds = 256;
}  // namespace

Status SamplingParams::validate() const {
  if (!(std::isfinite(temperature) && temperature >= 0.0f)) {
    return make_error(fmt::format("temperature must be finite and >= 0, got {}", temperature));
  }
  if (top_k < 0) return make_error(fmt::format("top_k must be >= 0 (0 = off), got {}", top_k));
  if (!(top_p > 0.0f && top_p <= 1.0f)) return make_error(fmt::format("top_p must be in (0, 1], got {}", top_p));
  if (!(min_p >= 0.0f && min_p <= 1.0f)) return make_error(fmt::format("min_p must be in [0, 1], got {}", min_p));
  if (!(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f)) {
    return make_error(fmt::format("repetition_penalty must be > 0 (1 = off), got {}", repetition_penalty));
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return make_error(fmt::format("presence_penalty must be in [-2, 2], got {}", presence_penalty));
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return make_error(fmt::format("frequency_penalty must be in [-2, 2], got {}", frequency_penalty));
  }
  if (logprobs < -1 || logprobs > kMaxLogprobs) {
    return make_error(fmt::format("logprobs must be in [0, {}] (or -1 = off), got {}", kMaxLogprobs, logprobs));
  }
  if (max_tokens < 1) return make_error(fmt::format("max_tokens must be >= 1, got {}", max_tokens));
  if (stop.size() > kMaxStopStrings) {
    return make_error(fmt::format("stop must have at most {} strings, got {}", kMaxStopStrings, stop.size()));
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    // An empty stop string would match before the first token.
    if (stop[i].empty()) return make_error(fmt::format("stop[{}] must not be empty", i));
  }
  if (logit_bias.size() > kMaxLogitBias) {
    return make_error(fmt::format("logit_bias must have at most {} entries, got {}", kMaxLogitBias, logit_bias.size()));
  }
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0) return make_error(fmt::format("logit_bias has token id {}", token));
    if (!(bias >= -100.0f && bias <= 100.0f)) {
      return make_error(fmt::format("logit_bias values must be in [-100, 100], got {} for token {}", bias, token));
    }
  }
  if (min_tokens < 0 || min_tokens > max_tokens) {
    return make_error(fmt::format("min_tokens must be in [0, max_tokens = {}], got {}", max_tokens, min_tokens));
  }
  if (stop_token_ids.size() > kMaxStopTokenIds) {
    return make_error(
        fmt::format("stop_token_ids must have at most {} ids, got {}", kMaxStopTokenIds, stop_token_ids.size()));
  }
  for (TokenId token : stop_token_ids)
    if (token < 0) return make_error(fmt::format("stop_token_ids has token id {}", token));
  return Status();
}

}  // namespace pagoda
