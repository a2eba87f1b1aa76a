// llama-server's native shapes (POST /completion and /completions, GET /props, GET /slots): a /completion body to
// the completion parameters a CompletionJob runs (or an ApiError naming the field), its generation settings as
// llama-server echoes them, and the /props and /slots objects. Pure functions on values: no engine, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

// llama-server's sampling defaults, used where a /completion request leaves them out.
inline constexpr float kLlamaTemperature = 0.8f;
inline constexpr int32_t kLlamaTopK = 40;
inline constexpr float kLlamaTopP = 0.95f;
inline constexpr float kLlamaMinP = 0.05f;

struct LlamaCompletionRequest {
  CompletionParams params;     // one prompt, text or token ids
  bool return_tokens = false;  // "tokens" in the answer (streamed pieces always carry theirs)
  int32_t n_probs = 0;         // completion_probabilities with this many alternatives (0: none)
};

// prompt (a string or token ids), n_predict (-1: to the context's end), temperature, top_k, top_p, min_p, seed
// (-1: random), stop, repeat_penalty, presence_penalty, frequency_penalty, n_probs, grammar (GBNF), json_schema,
// logit_bias (llama-server's [[id, bias|false]] or an object), ignore_eos, stream, return_tokens; cache_prompt and
// id_slot -1 accepted (the prefix cache serves every request; there are no slots to pick). Fields at their
// neutral value are accepted (typical_p 1, mirostat 0, dynatemp_range 0, n_cmpl 1, ...); anything else, unknown
// fields included, is a 400 naming it (llama-server ignores unknown fields; this server says so instead).
std::optional<ApiError> parse_llama_completion(std::string_view body, LlamaCompletionRequest* out);

// The settings a /completion answer echoes as generation_settings (and /props as its defaults' params).
nlohmann::json llama_generation_settings(const SamplingParams& sampling, int32_t n_probs, bool stream);
// llama-server's stop_type: "eos" (the model's end), "word" (a stop string), "limit" (n_predict or the context).
std::string_view llama_stop_type(FinishReason reason, const std::string& stop_string);
// completion_probabilities: per token {"id", "token", "bytes", "logprob", "top_logprobs": [...]}.
nlohmann::json llama_completion_probabilities(const std::vector<TokenLogprobInfo>& infos);

// The model's fill-in-the-middle tokens (GGUF tokenizer.ggml.fim_pre/suf/mid_token_id), when it has them.
struct FimTokens {
  std::optional<TokenId> pre, suf, mid;
  bool complete() const { return pre && suf && mid; }
  std::string missing() const;  // "fim_pre, fim_mid": the ones the model lacks
};
// /infill's fields taken out of its body (input_prefix, input_suffix; input_extra only empty), leaving a
// /completion body whose prompt (default "") is the text after the middle token.
std::optional<ApiError> split_llama_infill(std::string_view body, std::string* prefix, std::string* suffix,
                                           std::string* completion_body);
// llama-server's prompt order (PSM): [BOS] FIM_PRE prefix FIM_SUF suffix FIM_MID prompt.
std::vector<TokenId> llama_infill_tokens(const FimTokens& fim, std::optional<TokenId> bos,
                                         const std::vector<TokenId>& prefix, const std::vector<TokenId>& suffix,
                                         const std::vector<TokenId>& prompt);

// What /props and /slots say of the server.
struct LlamaServerFacts {
  std::string model_name;
  std::string model_path;
  std::string chat_template;
  std::string bos_token;
  std::string eos_token;
  int32_t total_slots = 1;  // sequences the engine runs at once
  int64_t n_ctx = 0;        // the context of each (pagoda's is the same for every sequence)
  int32_t busy_slots = 0;   // sequences running now (/slots' is_processing)
};
std::string llama_props_json(const LlamaServerFacts& facts);
std::string llama_slots_json(const LlamaServerFacts& facts);

}  // namespace pagoda::server
