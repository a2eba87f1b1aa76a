// Sampler: picks the next token of one sequence from its logits. Owns its random generator (seeded from
// SamplingParams::seed) and scratch buffers; one Sampler per sequence, not shared between threads.
// Order, as in llama.cpp and vLLM: logit_bias -> penalties -> (greedy: argmax) -> temperature -> top-k -> top-p ->
// min-p -> draw.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/types.h"
#include "sampling/sampling_params.h"

namespace pagoda {

class Sampler {
 public:
  explicit Sampler(const SamplingParams& params);
  // `logits`: f32 [vocab], modified in place. `prompt_tokens` and `output_tokens` feed the penalties.
  TokenId sample(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                 std::span<const TokenId> output_tokens);

  // Speculative decoding's verification of one draft token that the drafter proposed with certainty (prompt
  // lookup: q(draft) = 1), by the rejection rule of Leviathan et al. 2023 with this sampler's distribution p
  // (penalties, temperature, top-k, top-p, min-p applied): the draft is accepted with probability
  // min(1, p(draft) / q(draft)) = p(draft); otherwise the token is drawn from max(0, p - q), renormalized: p
  // without the draft. So the returned token is distributed exactly as sample()'s. Greedy: the argmax, accepted
  // when it is the draft. Same arguments as sample().
  struct DraftVerdict {
    TokenId token = -1;     // the draft when accepted, else the replacement
    bool accepted = false;  // the caller stops verifying this sequence's later drafts when false
  };
  DraftVerdict verify_draft(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                            std::span<const TokenId> output_tokens, TokenId draft);

 private:
  void apply_penalties(std::span<float> logits, std::span<const TokenId> prompt_tokens,
                       std::span<const TokenId> output_tokens);
  // candidates_ := the tokens temperature, top-k, top-p and min-p keep, each with its softmax numerator.
  void build_candidates(std::span<const float> logits);
  // A candidate drawn in proportion to its numerator, `excluded` (a token id, or -1) left out.
  TokenId draw(TokenId excluded);
  double uniform();  // in [0, 1), from the top 53 bits of the generator

  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, TokenId>> candidates_;  // scratch, reused across calls
  std::vector<int32_t> counts_;                        // scratch: output-token counts, [vocab]
};

}  // namespace pagoda
