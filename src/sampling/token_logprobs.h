// TokenLogprobs: one sampled token's log-probability and the most likely alternatives at its position, from
// the model's raw logits (before penalties and temperature, as vLLM reports them). compute_token_logprobs is a
// pure function over one logits row.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/types.h"

namespace pagoda {

struct TokenLogprobs {
  TokenId token = -1;
  float logprob = 0.0f;
  std::vector<std::pair<TokenId, float>> top;  // [num_top], most likely first (ties: lower id first)
  int32_t rank = 0;  // 1 + how many tokens are strictly more likely (vLLM's rank: the most likely is 1)
};

// log softmax(logits)[token], its rank and the `num_top` largest entries. `logits`: f32 [vocab]; NaN counts as -inf.
TokenLogprobs compute_token_logprobs(std::span<const float> logits, TokenId token, int32_t num_top);

}  // namespace pagoda
