// Sequence: one request's life inside the engine: its tokens (prompt then output), its KV state, how it
// samples, stops and streams, and its timing. Owned by the Engine (one per request); the Scheduler moves
// pointers to it between its waiting and running lists and touches only tokens, kv and status.
// Invariant: kv.num_computed_tokens <= tokens.size(); the tokens past it are what the next steps compute.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/generate_request.h"
#include "engine/request_stream.h"
#include "engine/request_timing.h"
#include "engine/stop_checker.h"
#include "kv/seq_kv_state.h"
#include "sampling/sampler.h"
#include "sampling/token_logprobs.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

enum class SeqStatus : uint8_t { kWaiting, kRunning, kFinished };

struct Sequence {
  Sequence(RequestId request_id, GenerateRequest request, int32_t block_size, const Tokenizer& tokenizer,
           uint64_t arrival_idx, int64_t arrival_us);

  int32_t num_tokens() const { return int32_t(tokens.size()); }
  int32_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  // Tokens that have no KV yet: the rest of the prompt while prefilling, 1 while decoding.
  int32_t num_uncomputed_tokens() const { return num_tokens() - kv.num_computed_tokens; }
  std::span<const TokenId> prompt() const { return std::span<const TokenId>(tokens).first(size_t(num_prompt_tokens)); }
  std::span<const TokenId> output() const {
    return std::span<const TokenId>(tokens).subspan(size_t(num_prompt_tokens));
  }

  RequestId request_id;
  int32_t priority;
  uint64_t arrival_idx;  // submission order, the FCFS tie-break
  SamplingParams sampling;
  std::vector<TokenId> tokens;  // prompt, then output
  int32_t num_prompt_tokens;
  SeqKvState kv;
  SeqStatus status = SeqStatus::kWaiting;
  int32_t num_cached_tokens = 0;  // prompt tokens the prefix cache served at the first admission

  Sampler sampler;
  StreamDecoder decoder;
  StopChecker stop_checker;
  std::shared_ptr<RequestStream> stream;
  RequestTiming timing;
  int32_t num_published_tokens = 0;                 // output tokens already sent to the stream
  std::vector<TokenLogprobs> unpublished_logprobs;  // of the output tokens not yet published (logprobs >= 0)
  std::vector<float> raw_logits;                    // scratch: the row before sampling changed it, [vocab]
};

}  // namespace pagoda
