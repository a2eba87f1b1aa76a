// The OpenAI API's request and response shapes for /v1/completions and /v1/chat/completions: pure functions
// from a JSON body to validated parameters (or an ApiError naming the field), and from results to response,
// chunk and usage JSON. No engine, no sockets: everything here is tested on strings.
#pragma once

#include <pagoda/request.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "chat/chat_template.h"
#include "core/types.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"
#include "server/constraint_params.h"
#include "server/tool_params.h"

namespace pagoda::server {

inline constexpr int32_t kMaxChoices = 16;   // n
inline constexpr int32_t kMaxLogprobs = 20;  // logprobs / top_logprobs
inline constexpr int32_t kMaxStops = 16;
inline constexpr int32_t kMaxPrompts = 64;  // prompts of one /v1/completions request

struct PromptInput {
  std::optional<std::string> text;  // a text prompt, or
  std::vector<TokenId> tokens;      // token ids given by the client
};

struct CompletionParams {
  bool chat = false;
  std::optional<std::string> model;
  std::vector<PromptInput> prompts;   // completions: one or more
  std::vector<ChatMessage> messages;  // chat
  bool add_generation_prompt = true;
  SamplingParams sampling;        // max_tokens meaningful only when max_tokens_given
  bool max_tokens_given = false;  // otherwise: 16 for completions (OpenAI), the rest of the context for chat
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage: a last chunk with the usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage on every chunk
  int32_t logprobs = -1;          // -1: none; else how many alternatives per token (0: the chosen one only)
  bool echo = false;              // completions: the prompt text (and with logprobs its tokens') before the completion
  bool echo_only = false;         // completions: echo with max_tokens 0: the prompt and its logprobs, nothing generated
  std::optional<std::string> suffix;  // completions: the text after the insertion (fill-in-the-middle)
  int32_t prompt_logprobs = -1;   // vLLM's prompt_logprobs: -1: none; else alternatives per prompt token
  std::optional<OutputConstraint> constraint;  // response_format, guided_*, structured_outputs, grammar
  ToolParams tools;                            // chat: tools, tool_choice, parallel_tool_calls
  // chat: vLLM's chat_template_kwargs, extra values of the template's context (enable_thinking, ...), as
  // transformers' apply_chat_template takes keyword arguments; key order kept.
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  // chat: how hard the model reasons (OpenAI's reasoning_effort, the Responses API's reasoning.effort): the
  // template's reasoning_effort value (gpt-oss's templates read it); refused for a template that does not.
  std::optional<std::string> reasoning_effort;
  std::string reasoning_effort_param = "reasoning_effort";  // the request's name for it, for errors
  // chat: Anthropic's thinking (enabled / disabled): the template's enable_thinking value (Qwen3's).
  std::optional<bool> enable_thinking;
  // chat: llama-server's per-request reasoning_format; nullopt: the server's --reasoning-format.
  std::optional<ReasoningFormat> reasoning_format;
};

inline constexpr int32_t kMaxJsonDepth = 64;  // nesting of a request body's arrays and objects

// A request body as a JSON object, or the error to answer: not JSON, not an object, or nested deeper than
// kMaxJsonDepth (checked before the parse, which would build a node per bracket: 8 MiB of '[' is a 500 MB tree).
std::optional<ApiError> parse_json_object(std::string_view body, nlohmann::json* out);

// Parses and validates a request body. Unknown and unimplemented fields, wrong types and values out of range are
// errors naming the field.
std::optional<ApiError> parse_completion_params(std::string_view body, bool chat, CompletionParams* out);

struct TopLogprob {
  std::string token;  // the token's bytes (may be part of a UTF-8 character)
  float logprob = 0.0f;
  TokenId id = -1;  // llama-server's completion_probabilities name it
};
struct TokenLogprobInfo {
  std::string token;             // the token's bytes (may be part of a UTF-8 character)
  std::optional<float> logprob;  // nullopt: an echoed prompt's first token, which nothing scores (null, as its top)
  std::vector<TopLogprob> top;
  int32_t text_offset = 0;  // completions: where the token starts in the choice's whole text (TextOffsetCounter)
  TokenId id = -1;
};

// Completions' text_offset: where each token starts in the text its bytes make one after another, counted in
// Unicode code points (what Python's len() counts, as OpenAI's and vLLM's offsets do; not bytes, not UTF-16
// units). A token that starts inside a character (a byte-fallback piece of it) gets that character's offset.
// One per choice: it carries the count from token to token, across streamed chunks.
class TextOffsetCounter {
 public:
  int32_t next(std::string_view token_bytes);  // the token's offset; then counts its characters
 private:
  int32_t num_chars_ = 0;  // characters begun so far (UTF-8 lead bytes seen)
};

// vLLM's prompt_logprobs entry: one token at one prompt position (the token there, or one of the most likely).
struct PromptLogprob {
  TokenId token_id = -1;
  float logprob = 0.0f;
  int32_t rank = 0;           // 1: the most likely
  std::string decoded_token;  // its bytes (may be part of a UTF-8 character: U+FFFD in JSON)
};
// Per prompt position: the prompt's token first, then the most likely ones not already listed; the first
// position has none (null in JSON).
using PromptLogprobs = std::vector<std::vector<PromptLogprob>>;

// One piece of a streamed tool call, as OpenAI streams them: the first piece of a call has its id and name, the
// later ones only more of its arguments.
struct ToolCallDelta {
  int32_t index = 0;  // of the call within the choice
  std::string id;     // the first piece only
  std::string name;   // the first piece only
  std::string arguments;
};

struct ChoiceResult {
  int32_t index = 0;
  std::string text;
  std::string reasoning;                        // chat: message.reasoning_content (delta.reasoning_content)
  std::vector<ToolCall> tool_calls;             // chat, whole response: message.tool_calls (content null when empty)
  std::vector<ToolCallDelta> tool_call_deltas;  // chat chunk: delta.tool_calls
  bool called_tools = false;                    // the choice ended with tool calls: finish_reason "tool_calls"
  std::optional<FinishReason> finish_reason;    // nullopt while streaming
  std::string stop_string;                      // the stop string that ended it (kStop), if one did
  std::vector<TokenLogprobInfo> logprobs;       // when asked for
  std::vector<TokenId> token_ids;               // the tokens the text came from (llama-server's "tokens")
  // vLLM's prompt_logprobs, when asked for: completions per choice, chat once for the response (the first
  // choice's; every choice has the same prompt).
  std::optional<PromptLogprobs> prompt_logprobs;
};

struct UsageFigures {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served by the prefix cache
  int32_t reasoning_tokens = 0;  // output tokens of the reasoning (counted per engine output, where a parser ran)
  double ttft_ms = 0.0;       // the first choice's time to its first token (Ollama's prompt_eval_duration)
};

// Identity of one response: the same in every chunk of a stream.
struct ResponseHeader {
  std::string id;       // cmpl-... or chatcmpl-...
  int64_t created = 0;  // unix seconds
  std::string model;
};

std::string_view response_id_prefix(bool chat);  // "chatcmpl-" or "cmpl-"
std::string_view finish_reason_json(FinishReason reason);  // "stop" | "length" | "abort"

std::string usage_json(const UsageFigures& usage);
// Whole responses (stream: false).
std::string completion_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices,
                                const UsageFigures& usage, bool with_logprobs);
// `legacy_functions`: a call as message.function_call / delta.function_call, finish_reason "function_call" (the
// request used the legacy functions API).
std::string chat_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const UsageFigures& usage,
                          bool with_logprobs, bool legacy_functions = false);
// One SSE chunk's JSON (stream: true). For chat, `first` adds the assistant role to the delta.
std::string completion_chunk(const ResponseHeader& h, const ChoiceResult& choice, bool with_logprobs,
                             const std::optional<UsageFigures>& usage);
std::string chat_chunk(const ResponseHeader& h, const ChoiceResult& choice, bool first, bool with_logprobs,
                       const std::optional<UsageFigures>& usage, bool legacy_functions = false);
// The stream's last chunk when include_usage: no choices, the whole usage.
std::string usage_chunk(const ResponseHeader& h, bool chat, const UsageFigures& usage);

// "data: JSON\n\n", and the stream's end.
std::string sse_event(std::string_view json);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace pagoda::server
