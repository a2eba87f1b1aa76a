// From sampled tokens and scheduler events to what each client receives.
#include "engine/output_processor.h"

#include <algorithm>

#include "core/check.h"
#include "engine/sequence.h"

namespace pagoda {

void OutputProcessor::add_request(RequestId request_id, std::shared_ptr<RequestStream> stream,
                                  TokenId last_prompt_token, const SamplingParams& sampling) {
  PAGODA_CHECK(tokenizer_ != nullptr || sampling.stop.empty(), "stop strings without a tokenizer");
  RequestText r{std::move(stream),       std::nullopt,       StopChecker(sampling.stop), sampling.ignore_eos, {},
                sampling.stop_token_ids, sampling.min_tokens};
  if (tokenizer_ != nullptr) r.decoder.emplace(*tokenizer_, last_prompt_token);
  const bool inserted = requests_.emplace(request_id, std::move(r)).second;
  PAGODA_CHECK(inserted, "request id {} added twice", request_id);
}

void OutputProcessor::find_stop_strings(std::span<SampledToken> sampled) {
  if (tokenizer_ == nullptr) return;
  const Sequence* ended = nullptr;  // a request whose earlier token of this step ended it
  for (SampledToken& t : sampled) {
    if (t.seq == ended || t.grammar_dead_end || t.completes_prefill) continue;  // these have no token
    RequestText& r = requests_.at(t.seq->request_id);
    if ((tokenizer_->ends_generation(t.token) && !r.ignore_eos) ||
        std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), t.token) != r.stop_token_ids.end()) {
      r.unpublished.emplace_back();  // EOS and stop_token_ids have no text
      ended = t.seq;
      continue;
    }
    // Before min_tokens stop strings do not count (vLLM's rule): the text goes out unchecked.
    if (t.seq->num_output_tokens() + 1 <= r.min_tokens) {
      r.unpublished.push_back(r.decoder->push(t.token));
      continue;
    }
    StopChecker::Output piece = r.stop_checker.push(r.decoder->push(t.token));
    r.unpublished.push_back(std::move(piece.text));
    t.completes_stop_string = piece.stopped;
    if (piece.stopped) ended = t.seq;
  }
}

void OutputProcessor::publish(std::span<SeqEvent> events) {
  for (SeqEvent& e : events) {
    auto it = requests_.find(e.request_id);
    PAGODA_CHECK(it != requests_.end(), "an event for request {}, which has no output state", e.request_id);
    RequestText& r = it->second;
    RequestOutput out;
    out.request_id = e.request_id;
    if (e.token >= 0) out.new_tokens.push_back(e.token);
    if (e.logprobs) out.logprobs.push_back(std::move(*e.logprobs));
    out.logits = std::move(e.logits);
    out.prompt_logits = std::move(e.prompt_logits);
    out.prompt_logprobs = std::move(e.prompt_logprobs);
    out.embedding = std::move(e.embedding);
    if (e.token >= 0 && !r.unpublished.empty()) {
      out.text = std::move(r.unpublished.front());
      r.unpublished.pop_front();
    }
    out.finished = e.finished;
    out.finish_reason = e.finish_reason;
    out.grammar_error = std::move(e.grammar_error);
    out.num_prompt_tokens = e.num_prompt_tokens;
    out.num_cached_tokens = e.num_cached_tokens;
    out.num_output_tokens = e.num_output_tokens;
    out.timing = std::move(e.timing);
    // At the end, text held back for an incomplete character or a possible stop string is final, unless a stop
    // string cut the text or the request was cancelled.
    if (e.finished && r.decoder && !r.stop_checker.stopped() && e.finish_reason != FinishReason::kAbort) {
      StopChecker::Output tail = r.stop_checker.push(r.decoder->flush());
      out.text += tail.text;
      if (!tail.stopped) out.text += r.stop_checker.flush();
    }
    if (e.finished && e.finish_reason == FinishReason::kStop) out.stop_string = r.stop_checker.matched();
    std::shared_ptr<RequestStream> stream = r.stream;
    if (e.finished) requests_.erase(it);
    stream->push(std::move(out));
  }
}

}  // namespace pagoda
