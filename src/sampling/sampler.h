// Sampler: picks the next token of one sequence from its logits. Owns its random generator (seeded from
// SamplingParams::seed) and scratch buffers; one Sampler per sequence, not shared between threads.
// Order, as in llama.cpp and vLLM: penalties -> (greedy: argmax) -> temperature -> top-k -> top-p -> min-p ->
// draw.
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

 private:
  SamplingParams params_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, TokenId>> candidates_;  // scratch, reused across calls
  std::vector<int32_t> counts_;                        // scratch: output-token counts, [vocab]
};

}  // namespace pagoda
