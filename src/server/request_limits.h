// RequestLimits: the one place each limit of one request is checked at the server, whatever protocol it came in:
// prompt token ids against the vocabulary, the context (the longest prompt + max_tokens, with the protocol's
// default max_tokens filled in), min_tokens against max_tokens, the engine queue's room for the request's
// entries, and what a response may hold (--max-request-tokens). Every protocol's request passes through these
// before its job submits it, so the engine's own checks of the same things are its invariants. Pure functions of
// a request and the limits: no HTTP, no protocol's shapes, no engine.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "core/types.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

struct RequestLimits {
  int32_t vocab_size = 0;
  int64_t max_seq_len = 0;         // the context one request may fill (a smaller one it asked for applied)
  int32_t max_queue = 0;           // the engine's waiting queue (--max-queue)
  int32_t batch_size = 1;          // samples one queue entry holds (the engine's batch)
  int64_t max_request_tokens = 0;  // ApiServerOptions::max_request_tokens
};

// What max_tokens is when the request leaves it out: OpenAI's completions' 16, or the rest of the context (chat,
// Ollama's and llama-server's -1).
enum class DefaultMaxTokens { kSixteen, kRestOfContext };

// The first of `ids` outside the vocabulary, as "<what> token id N is outside the vocabulary (0..V-1)".
std::optional<ApiError> check_token_ids(std::span<const TokenId> ids, int32_t vocab_size, std::string_view what,
                                        std::string_view param);
// A completion's queue entries (each prompt's n choices in groups of the batch) against the queue's capacity:
// more could never be accepted.
std::optional<ApiError> check_queue_entries(const RequestLimits& limits, int64_t num_prompts, int64_t n);
// A pooling request's inputs (an embeddings request's inputs, a rerank request's documents: one queue entry each)
// against the queue's capacity; `noun` names them in the message ("inputs", "documents"), `param` is the field.
std::optional<ApiError> check_pooling_queue(const RequestLimits& limits, int64_t num_inputs, std::string_view noun,
                                            std::string_view param);
// One embeddings input against the context.
std::optional<ApiError> check_embedding_length(const RequestLimits& limits, size_t index, int64_t num_tokens);
// The context error OpenAI gives (code context_length_exceeded): the prompt alone (max_tokens 0) or with
// max_tokens.
ApiError context_error(int64_t max_seq_len, int64_t prompt_tokens, int64_t max_tokens);
// The longest prompt and max_tokens against the context, the default max_tokens filled in where none was given,
// then min_tokens <= max_tokens.
std::optional<ApiError> apply_length_limits(const RequestLimits& limits, int64_t longest_prompt,
                                            DefaultMaxTokens default_max_tokens, CompletionParams* params);
// What the response may hold, in tokens (each logprob alternative one more): prompt logprobs plus every choice's
// max_tokens, against max_request_tokens; an implied max_tokens is lowered to fit. Returns the total.
std::variant<int64_t, ApiError> bound_request_work(const RequestLimits& limits, CompletionParams* params,
                                                   int64_t num_prompts, int64_t num_prompt_tokens);

}  // namespace pagoda::server
