// Sequence construction.
#include "engine/sequence.h"

namespace pagoda {

Sequence::Sequence(RequestId request_id_, GenerateRequest request, int32_t block_size, const Tokenizer& tokenizer,
                   uint64_t arrival_idx_, int64_t arrival_us)
    : request_id(request_id_),
      priority(request.priority),
      arrival_idx(arrival_idx_),
      sampling(std::move(request.sampling)),
      tokens(std::move(request.prompt)),
      num_prompt_tokens(int32_t(tokens.size())),
      kv(block_size),
      sampler(sampling),
      decoder(tokenizer, tokens.empty() ? -1 : tokens.back()),
      stop_checker(sampling.stop),
      stream(std::make_shared<RequestStream>()) {
  timing.arrival_us = arrival_us;
  tokens.reserve(tokens.size() + size_t(sampling.max_tokens));
}

}  // namespace pagoda
