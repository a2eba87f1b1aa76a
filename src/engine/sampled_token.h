// SampledToken: the token the engine's sampling drew for one sequence in one step (or a prefill-only request's end), with
// what the request asked to see of the row it came from, and whether its text completed a stop string (the
// OutputProcessor says). The input of Scheduler::update. A plain value, rebuilt every step.
#pragma once

#include <optional>
#include <vector>

#include "core/types.h"
#include "sampling/token_logprobs.h"

namespace pagoda {

struct Sequence;

struct SampledToken {
  Sequence* seq = nullptr;  // borrowed from the scheduler for the step
  TokenId token = -1;
  std::optional<TokenLogprobs> logprobs;  // when SamplingParams::logprobs >= 0
  std::vector<float> logits;              // f32 [vocab], the row before sampling, when output_logits
  bool completes_stop_string = false;     // set by OutputProcessor::find_stop_strings
  bool completes_grammar = false;         // the token finished the request's grammar: nothing but its end may follow
  // The request's grammar allowed no token at all (a grammar whose only continuations no token spells, or one
  // whose end min_tokens forbids): `token` is meaningless and the request ends (kAbort) without it.
  bool grammar_dead_end = false;
  // No token: a prefill-only request's step computed its last prompt token (its pooled vector, Sequence::pooled,
  // and its prompt rows are complete); the request ends (kStop) with them.
  bool completes_prefill = false;
};

}  // namespace pagoda
