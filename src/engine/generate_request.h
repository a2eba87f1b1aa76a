// GenerateRequest: what a caller submits to the Engine: prompt token ids, how to sample, when to stop, and the
// raw logits it wants back. A plain value; the engine validates it on submit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/types.h"
#include "engine/pooling.h"
#include "engine/reasoning_gate.h"
#include "sampling/sampling_params.h"

namespace pagoda {
namespace grammar {
class CompiledGrammar;
}

using RequestId = int64_t;

struct GenerateRequest {
  std::vector<TokenId> prompt;  // token ids, BOS included when the model wants one
  SamplingParams sampling;
  int32_t priority = 0;  // lower runs first (vLLM's convention); ties go first come, first served
  // Raw logits in the outputs (f32 rows of the vocabulary), for scoring (perplexity) and debugging; both cost a
  // copy of each row. prompt_logits_start >= 0: the rows of prompt positions prompt_logits_start .. end (each
  // predicts the token after its position; the last one is the row the first output token is sampled from),
  // on the first output; such a request takes no prefix-cache hit (its rows must be computed), and the engine
  // must allow it (EngineConfig::prompt_logits). output_logits: with each output token, the row it was sampled
  // from, before penalties or temperature touched it.
  int32_t prompt_logits_start = -1;
  bool output_logits = false;
  // The output's constraint (a JSON schema, a GBNF grammar...), compiled for the engine's tokenizer: before every
  // draw, tokens the grammar does not allow next are masked out (greedy included); end-of-generation tokens are
  // allowed only where the output so far is complete, and the generation ends (kStop) as soon as nothing but its
  // end can follow. A grammar that never completes ends by length. Null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar = nullptr;
  // With a grammar, a reasoning model's: the grammar holds only after the output's reasoning (reasoning_gate.h);
  // end-of-generation tokens are held off while it reasons (the answer is still to come).
  std::optional<ReasoningGate> reasoning_gate = std::nullopt;
  // A prefill-only request: its prompt is computed and nothing is sampled. It ends (kStop, no token) in the step
  // that computes its last prompt token, that one event carrying what the request asked of its prompt (prompt
  // logits or logprobs, the pooled vector); its KV blocks are sized for the prompt alone, and its RequestTiming's
  // first_token_us is that step (its "first output"). It asks for nothing sampled (no grammar, reasoning gate,
  // logprobs, output logits, n > 1), and `sampling` is not read: neither validated nor used.
  bool prefill_only = false;
  // A pooling request (embeddings), always prefill-only: its one event carries the pooled final hidden state
  // (RequestOutput::embedding, not normalized). It takes a prefix-cache hit only with kLast (mean and CLS need
  // rows a hit would skip), asks for no prompt logits or logprobs, and the engine must allow it
  // (EngineConfig::pooling).
  Pooling pooling = Pooling::kNone;
  // Prompt logprobs (echo with logprobs, vLLM's prompt_logprobs): >= 0: on the first output, for each prompt
  // token after the first, its logprob given the tokens before it, its rank and the `prompt_logprobs` most
  // likely tokens at its position (RequestOutput::prompt_logprobs). Only the logprobs are kept, never the rows,
  // so it costs (prompt tokens x alternatives) entries, not (prompt tokens x vocab) floats. Like prompt logits it
  // takes no prefix-cache hit, needs EngineConfig::prompt_logits, and excludes prompt_logits_start.
  int32_t prompt_logprobs = -1;
};

}  // namespace pagoda
