// SamplingParams: how one request turns logits into tokens, and when it stops. A plain value, validated once
// at the boundary (CLI flags or the HTTP request) with validate().
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy (argmax)
  int32_t top_k = 0;                // 0 = off; keep the k most likely tokens
  float top_p = 1.0f;               // (0, 1]; 1 = off; nucleus sampling
  float min_p = 0.0f;               // [0, 1]; 0 = off; drop tokens below min_p * p(max)
  float repetition_penalty = 1.0f;  // > 0; 1 = off; CTRL-style, over prompt and output tokens
  float presence_penalty = 0.0f;    // [-2, 2]; OpenAI-style, over output tokens
  float frequency_penalty = 0.0f;   // [-2, 2]; OpenAI-style, over output tokens
  std::optional<uint64_t> seed;     // same seed, same text; unset = random
  int32_t max_tokens = 256;         // >= 1; new tokens to generate at most
  std::vector<std::string> stop;    // stop strings (not included in the output)
  bool ignore_eos = false;          // keep generating past EOS (benchmarks)
  int32_t logprobs = -1;            // -1 = off; else report each token's log-probability and this many of the
                                    // most likely alternatives (0..20), from the model's raw distribution

  // Errors name the field and the allowed range: "top_p must be in (0, 1], got 1.5".
  Status validate() const;
  bool is_greedy() const { return temperature == 0.0f; }
};

}  // namespace pagoda
