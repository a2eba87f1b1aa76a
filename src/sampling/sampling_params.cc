// SamplingParams::validate: the one place the allowed ranges of sampling parameters are checked. Comparisons
// are written so that NaN fails every one of them.
#include "sampling/sampling_params.h"

#include <fmt/format.h>

#include <cmath>

namespace pagoda {

namespace {
constexpr size_t kMaxStopStrings = 16;
constexpr int32_t kMaxLogprobs = 20;
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
  return Status();
}

}  // namespace pagoda
