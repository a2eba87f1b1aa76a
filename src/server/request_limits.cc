// RequestLimits: each limit of one request, checked once for every protocol.
#include "server/request_limits.h"

#include <fmt/format.h>

#include <algorithm>

namespace pagoda::server {

std::optional<ApiError> check_token_ids(std::span<const TokenId> ids, int32_t vocab_size, std::string_view what,
                                        std::string_view param) {
  for (TokenId t : ids)
    if (t < 0 || t >= vocab_size)
      return invalid_request(fmt::format("{} token id {} is outside the vocabulary (0..{})", what, t, vocab_size - 1),
                             std::string(param));
  return std::nullopt;
}

std::optional<ApiError> check_queue_entries(const RequestLimits& limits, int64_t num_prompts, int64_t n) {
  const int64_t batch = limits.batch_size;
  const int64_t num_entries = num_prompts * ((n + batch - 1) / batch);
  if (num_entries <= limits.max_queue) return std::nullopt;
  return invalid_request(fmt::format("the request needs {} queue entries ({} prompts x n {} in groups of the batch "
                                     "size {}) but this server queues at most {} (--max-queue): it can never be "
                                     "accepted",
                                     num_entries, num_prompts, n, batch, limits.max_queue),
                         "n");
}

std::optional<ApiError> check_pooling_queue(const RequestLimits& limits, int64_t num_inputs, std::string_view noun,
                                            std::string_view param) {
  if (num_inputs <= limits.max_queue) return std::nullopt;
  return invalid_request(fmt::format("the request has {} {} but this server queues at most {} (--max-queue): it "
                                     "can never be accepted",
                                     num_inputs, noun, limits.max_queue),
                         std::string(param));
}

std::optional<ApiError> check_embedding_length(const RequestLimits& limits, size_t index, int64_t num_tokens) {
  if (num_tokens < limits.max_seq_len) return std::nullopt;
  return invalid_request(fmt::format("input {} has {} tokens; this model's context holds {} for an input to embed",
                                     index, num_tokens, limits.max_seq_len - 1),
                         "input");
}

ApiError context_error(int64_t max_seq_len, int64_t prompt_tokens, int64_t max_tokens) {
  ApiError e = invalid_request(
      max_tokens > 0
          ? fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} in "
                        "the prompt, {} for the completion). Please reduce the prompt or max_tokens.",
                        max_seq_len, prompt_tokens + max_tokens, prompt_tokens, max_tokens)
          : fmt::format("This model's maximum context length is {} tokens. However, the prompt has {} tokens, "
                        "leaving no room for the completion. Please reduce the prompt.",
                        max_seq_len, prompt_tokens),
      max_tokens > 0 ? "max_tokens" : "prompt");
  e.code = "context_length_exceeded";
  return e;
}

std::optional<ApiError> apply_length_limits(const RequestLimits& limits, int64_t longest_prompt,
                                            DefaultMaxTokens default_max_tokens, CompletionParams* params) {
  SamplingParams& s = params->sampling;
  const int64_t max_seq_len = limits.max_seq_len;
  if (longest_prompt >= max_seq_len) return context_error(max_seq_len, longest_prompt, 0);
  if (params->max_tokens_given) {
    if (longest_prompt + s.max_tokens > max_seq_len) return context_error(max_seq_len, longest_prompt, s.max_tokens);
    if (s.min_tokens > s.max_tokens)
      return invalid_request(
          fmt::format("'min_tokens' must be at most max_tokens ({}), got {}", s.max_tokens, s.min_tokens),
          "min_tokens");
  } else {
    const int64_t room = max_seq_len - longest_prompt;
    s.max_tokens =
        int32_t(default_max_tokens == DefaultMaxTokens::kRestOfContext ? room : std::min<int64_t>(16, room));
    if (s.min_tokens > s.max_tokens)
      return invalid_request(fmt::format("'min_tokens' ({}) is more than the {} tokens the request may generate",
                                         s.min_tokens, s.max_tokens),
                             "min_tokens");
  }
  return std::nullopt;
}

std::variant<int64_t, ApiError> bound_request_work(const RequestLimits& limits, CompletionParams* params,
                                                   int64_t num_prompts, int64_t num_prompt_tokens) {
  CompletionParams& p = *params;
  // What the response holds per output token: its text, and with logprobs the chosen token's entry and each
  // alternative's.
  const int64_t per_token = 1 + (p.logprobs >= 0 ? 1 + p.logprobs : 0);
  const int64_t per_choice_token = num_prompts * p.n * per_token;
  // Scored prompt tokens, in each choice: echo with logprobs gives each its text and entries as an output token's;
  // prompt_logprobs its token's entry and each alternative's.
  const int64_t per_prompt_token =
      (p.echo && p.logprobs >= 0 ? per_token : 0) + (p.prompt_logprobs >= 0 ? 1 + p.prompt_logprobs : 0);
  // Completions score the prompt in every choice; chat returns its prompt_logprobs once per response.
  const int64_t scored_copies = p.chat ? 1 : p.n;
  const int64_t prompt_work = num_prompt_tokens * scored_copies * per_prompt_token;
  const int64_t limit = limits.max_request_tokens;
  if (prompt_work > limit)
    return invalid_request(
        fmt::format("the request's prompt logprobs are {} entries ({} prompt tokens x {} x {} per token), more "
                    "than the {} one request may ask for on this server (--max-request-tokens; each logprob "
                    "alternative counts as a token); lower n, logprobs or prompt_logprobs, or shorten the prompts",
                    prompt_work, num_prompt_tokens, p.chat ? "1 (chat scores its prompt once)" : fmt::format("n {}", p.n),
                    per_prompt_token, limit),
        p.prompt_logprobs >= 0 ? "prompt_logprobs" : "logprobs");
  const int64_t left = limit - prompt_work;
  if (int64_t(p.sampling.max_tokens) * per_choice_token <= left)
    return prompt_work + p.sampling.max_tokens * per_choice_token;
  if (!p.max_tokens_given && per_choice_token <= left) {
    p.sampling.max_tokens = int32_t(left / per_choice_token);  // the implied default, lowered to fit
    return prompt_work + p.sampling.max_tokens * per_choice_token;
  }
  return invalid_request(
      fmt::format("the request asks for up to {} output tokens ({} prompts x n {} x max_tokens {}{}{}), more than the "
                  "{} one request may ask for on this server (--max-request-tokens; each logprob alternative counts "
                  "as a token); lower n, max_tokens or logprobs",
                  prompt_work + int64_t(p.sampling.max_tokens) * per_choice_token, num_prompts, p.n,
                  p.sampling.max_tokens, per_token > 1 ? fmt::format(" x {} per token with logprobs", per_token) : "",
                  prompt_work > 0 ? fmt::format(" + {} prompt logprob entries", prompt_work) : "", limit),
      p.max_tokens_given ? "max_tokens" : "n");
}

}  // namespace pagoda::server
