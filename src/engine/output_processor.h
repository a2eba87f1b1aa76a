// OutputProcessor: between the scheduler and the engine's users. Turns each request's sampled tokens into text
// (complete UTF-8 only, nothing past a stop string; end-of-generation tokens and stop_token_ids have none), and the
// scheduler's events into the RequestOutputs its client pops from its stream: text, tokens, logprobs, logits, the
// finish and the figures. Stop strings are a text matter but their effect is the scheduler's: find_stop_strings runs on
// a step's sampled tokens before Scheduler::update, so a stop string finishes its sequence (and frees its blocks) in
// the step whose token completed it. Owns each live request's text state (stream decoder, stop checker, the
// text of the step not yet published) and shares its stream with the client; it never sees a block or a tensor.
// Engine-thread only. Borrows the tokenizer; without one it publishes token ids only (no text; stop strings must
// then be refused before they reach it).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/request_stream.h"
#include "engine/sampled_token.h"
#include "engine/seq_event.h"
#include "engine/stop_checker.h"
#include "sampling/sampling_params.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

class OutputProcessor {
 public:
  explicit OutputProcessor(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}

  // A request the scheduler now holds: its outputs go to `stream`. `last_prompt_token` starts its text (a
  // SentencePiece space after BOS).
  void add_request(RequestId request_id, std::shared_ptr<RequestStream> stream, TokenId last_prompt_token,
                   const SamplingParams& sampling);
  // Decodes the text of each sampled token and marks the ones whose text completes a stop string. A request's
  // tokens after one that ends it (a stop string, or an end-of-generation token it does not ignore) are left
  // alone: Scheduler::update drops them.
  void find_stop_strings(std::span<SampledToken> sampled);
  // Pushes one RequestOutput per event to its request's stream, with the text decoded for its token (and at a
  // finish that is not a stop string or a cancel, what the decoder and stop checker still held). A finished
  // event ends the request here.
  void publish(std::span<SeqEvent> events);

  int32_t num_requests() const { return int32_t(requests_.size()); }

 private:
  struct RequestText {
    std::shared_ptr<RequestStream> stream;
    std::optional<StreamDecoder> decoder;  // none without a tokenizer
    StopChecker stop_checker;
    bool ignore_eos = false;
    // Text of each of this step's tokens (one entry per token, EOS's empty), until its event is published; a
    // step verifying drafts gives a request several tokens.
    std::deque<std::string> unpublished;
    std::vector<TokenId> stop_token_ids;  // end the generation without text, as EOS does
    int32_t min_tokens = 0;               // stop strings count from the token after this many
  };

  const Tokenizer* tokenizer_;
  std::unordered_map<RequestId, RequestText> requests_;
};

}  // namespace pagoda
