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
  bool echo = false;              // completions: the prompt text before the completion
  std::optional<OutputConstraint> constraint;  // response_format, guided_*, structured_outputs, grammar
  ToolParams tools;                            // chat: tools, tool_choice, parallel_tool_calls
  // chat: vLLM's chat_template_kwargs, extra values of the template's context (enable_thinking, ...), as
  // transformers' apply_chat_template takes keyword arguments; key order kept.
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
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
};
struct TokenLogprobInfo {
  std::string token;
  float logprob = 0.0f;
  std::vector<TopLogprob> top;
};

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
  std::vector<ToolCall> tool_calls;             // chat, whole response: message.tool_calls (content null when empty)
  std::vector<ToolCallDelta> tool_call_deltas;  // chat chunk: delta.tool_calls
  bool called_tools = false;                    // the choice ended with tool calls: finish_reason "tool_calls"
  std::optional<FinishReason> finish_reason;    // nullopt while streaming
  std::string stop_string;                      // the stop string that ended it (kStop), if one did
  std::vector<TokenLogprobInfo> logprobs;       // when asked for
  int32_t text_offset = 0;                      // completions logprobs: where `text` starts in the whole
};

struct UsageFigures {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served by the prefix cache
};

// Identity of one response: the same in every chunk of a stream.
struct ResponseHeader {
  std::string id;       // cmpl-... or chatcmpl-...
  int64_t created = 0;  // unix seconds
  std::string model;
};

std::string new_response_id(bool chat);
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
