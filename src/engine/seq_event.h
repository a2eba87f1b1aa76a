// SeqEvent: what one step (or a cancel) did to one request, as the Scheduler decided it: the token it appended
// (if any) with its logprobs and logits, whether the request finished and why, and its figures. The
// OutputProcessor turns each into the RequestOutput its client receives. A plain value.
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

struct SeqEvent {
  RequestId request_id = -1;
  TokenId token = -1;  // -1: none (a cancel)
  std::optional<TokenLogprobs> logprobs;
  std::vector<float> logits;                   // f32 [vocab]: the row `token` was sampled from, when asked for
  std::vector<float> prompt_logits;            // f32 [rows, vocab]: with the first token, the prompt rows asked for
  std::vector<TokenLogprobs> prompt_logprobs;  // [prompt tokens - 1]: with the first token, when asked for
  std::vector<float> embedding;  // f32 [dim]: a pooling request's pooled hidden state, on its finished event
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;  // meaningful when finished
  // kAbort by the engine itself because the request's grammar cannot go on (it allowed no token, or its matcher
  // overflowed): why, in words for the client; empty for a cancel.
  std::string grammar_error;
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_tokens = 0;
  int32_t num_output_tokens = 0;        // after this event
  std::optional<RequestTiming> timing;  // when finished
};

}  // namespace pagoda
