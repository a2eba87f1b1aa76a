// Token masks as the sampler uses them: bit `id` of word id / 32 is 1 when token `id` may come next
// (GrammarMatcher::fill_mask). apply_token_mask sets every other logit to -infinity before any sampler runs
// (greedy included), so a constrained sequence can only pick allowed tokens. Pure functions over spans.
#pragma once

#include <cstdint>
#include <span>

#include "core/types.h"

namespace pagoda::grammar {

inline bool token_allowed(std::span<const uint32_t> mask, TokenId id) {
  return id >= 0 && size_t(id) < mask.size() * 32 && ((mask[size_t(id) >> 5] >> (id & 31)) & 1u) != 0;
}

// `logits`: f32 [vocab] of one sequence. Logits of disallowed tokens, and of ids past the mask (a model's padded
// vocabulary rows), become -infinity. Returns the number of allowed tokens left (0: the caller has a bug or the
// grammar is finished; see GrammarMatcher::is_complete).
int32_t apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask);

}  // namespace pagoda::grammar
