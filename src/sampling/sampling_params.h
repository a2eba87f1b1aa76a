// SamplingParams: how one request turns logits into tokens, and when it stops. A plain value, validated once
// at the boundary (CLI flags or the HTTP request) with validate().
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"

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
  // OpenAI's logit_bias: added to the token's logit before penalties and sampling; -100 bans it, +100 all but
  // forces it. Token ids are checked against the vocabulary where it is known (Engine::submit).
  std::vector<std::pair<TokenId, float>> logit_bias;
  // vLLM's min_tokens: until this many tokens are out, end-of-generation tokens and stop_token_ids cannot be
  // drawn and stop strings are not looked for. <= max_tokens.
  int32_t min_tokens = 0;
  // vLLM's stop_token_ids: tokens that end the generation besides the model's own end-of-generation tokens; like
  // those, they add no text.
  std::vector<TokenId> stop_token_ids;

  // Errors name the field and the allowed range: "top_p must be in (0, 1], got 1.5".
  Status validate() const;
  bool is_greedy() const { return temperature == 0.0f; }
};

}  // namespace pagoda
