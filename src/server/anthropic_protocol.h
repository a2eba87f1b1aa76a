// Anthropic's Messages API shapes (POST /v1/messages): a request body to the chat parameters a CompletionJob runs
// (or an ApiError naming the field), and results to Anthropic's message, its stream events and its error body.
// Pure functions on strings: no engine, no sockets.
#pragma once

#include <pagoda/request.h>

#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"
#include "server/http_message.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

// Parses and validates a Messages request into chat parameters: system (a string or text blocks), messages
// (user and assistant turns: a string or text blocks; an assistant's tool_use blocks become its tool calls, a
// user's tool_result blocks tool messages), max_tokens (required), temperature, top_p, top_k, stop_sequences,
// stream, metadata.user_id, client tools (name, description, input_schema) and tool_choice (auto, any, tool,
// none; disable_parallel_tool_use), through the chat endpoint's tool machinery. Thinking, server tools and the
// other fields this server does not implement, image and document blocks, and a last assistant turn to continue
// (prefill) are errors naming the field; so are unknown fields.
std::optional<ApiError> parse_anthropic_messages(std::string_view body, CompletionParams* out);

// POST /v1/messages/count_tokens: a Messages request without max_tokens (the fields that shape the prompt:
// model, system, messages, tools, tool_choice), parsed as parse_anthropic_messages parses it.
std::optional<ApiError> parse_anthropic_count_tokens(std::string_view body, CompletionParams* out);

// "end_turn" (the model's end), "stop_sequence" (one of stop_sequences), "tool_use" (it called tools),
// "max_tokens" (max_tokens or the context).
std::string_view anthropic_stop_reason(FinishReason reason, const std::string& stop_string, bool called_tools);
// A call's arguments as a tool_use block's input object (unparseable text, a call cut short, kept as
// {"_unparsed_arguments": text}).
nlohmann::json tool_input(const std::string& arguments);
// {"type": "error", "error": {"type", "message"}}, the type from the HTTP status (invalid_request_error,
// authentication_error, not_found_error, rate_limit_error, api_error, overloaded_error...).
std::string anthropic_error_json(const ApiError& error);
HttpResponse anthropic_error_response(const ApiError& error);
// The whole message: {"id", "type": "message", "role": "assistant", "model", "content": [text block, tool_use
// blocks], "stop_reason",
// "stop_sequence", "usage": {"input_tokens", "output_tokens"}}.
std::string anthropic_message(const std::string& id, const std::string& model, const ChoiceResult& choice,
                              const UsageFigures& usage);
// One SSE event: "event: NAME\ndata: JSON\n\n".
std::string anthropic_event(std::string_view name, const nlohmann::json& data);

}  // namespace pagoda::server
