// Sequence construction.
#include "engine/sequence.h"

#include <algorithm>

namespace pagoda {

Sequence::Sequence(RequestId request_id_, GenerateRequest request, int32_t block_size, int32_t max_seq_len,
                   uint64_t arrival_idx_, int64_t arrival_us)
    : request_id(request_id_),
      priority(request.priority),
      arrival_idx(arrival_idx_),
      sampling(std::move(request.sampling)),
      tokens(std::move(request.prompt)),
      num_prompt_tokens(int32_t(tokens.size())),
      max_num_tokens(request.prefill_only
                         ? num_prompt_tokens
                         : int32_t(std::min<int64_t>(int64_t(tokens.size()) + sampling.max_tokens, max_seq_len))),
      kv(block_size),
      sampler(sampling),
      prompt_logits_start(request.prompt_logits_start),
      output_logits(request.output_logits),
      prompt_logprobs(request.prompt_logprobs),
      prefill_only(request.prefill_only),
      pooling(request.pooling) {
  // No rollback: nothing takes tokens back (speculative decoding would).
  if (request.grammar) grammar.emplace(std::move(request.grammar), 0);
  if (request.reasoning_gate) reasoning_gate = ReasoningGateState(std::move(*request.reasoning_gate));
  timing.arrival_us = arrival_us;
  tokens.reserve(size_t(std::max(max_num_tokens, num_prompt_tokens)));
}

}  // namespace pagoda
