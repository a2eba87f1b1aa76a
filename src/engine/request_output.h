// RequestOutput: one event of a request's stream, published by the engine after a step: the tokens and the
// final text that step added (with the logprobs and logits asked for), and at the end the finish reason, counts
// and timing. A plain value.
#pragma once

#include <pagoda/request.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "engine/generate_request.h"
#include "engine/request_timing.h"
#include "sampling/token_logprobs.h"

namespace pagoda {

struct RequestOutput {
  RequestId request_id = -1;
  std::vector<TokenId> new_tokens;      // sampled since the previous event
  std::vector<TokenLogprobs> logprobs;  // [new_tokens.size()] when SamplingParams::logprobs >= 0, else empty
  std::vector<float> logits;  // f32 [new_tokens.size(), vocab] when GenerateRequest::output_logits, else empty
  // f32 [prompt rows, vocab] on the first token's output when GenerateRequest::prompt_logits_start >= 0
  std::vector<float> prompt_logits;
  // [prompt tokens - 1] on the first token's output when GenerateRequest::prompt_logprobs >= 0: entry i is prompt
  // token i + 1's (the first prompt token has none)
  std::vector<TokenLogprobs> prompt_logprobs;
  // f32 [dim] on a pooling request's finished event (GenerateRequest::pooling): the pooled final hidden state
  std::vector<float> embedding;
  std::string text;  // text that became final since the previous event (UTF-8 complete)
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;  // meaningful when finished
  std::string stop_string;  // the stop string that ended it (kStop), empty when something else did
  // kAbort because the request's grammar could not go on (SeqEvent::grammar_error); empty otherwise
  std::string grammar_error;
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;        // prompt tokens served by the prefix cache at admission
  int32_t num_output_tokens = 0;        // so far
  std::optional<RequestTiming> timing;  // set on the finished event
};

}  // namespace pagoda
