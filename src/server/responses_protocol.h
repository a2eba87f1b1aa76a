// OpenAI's Responses API shapes (POST /v1/responses, stateless): a request body to the chat parameters a
// CompletionJob runs (or an ApiError naming the Responses field), and results to the response object, its output
// items and its usage. The request is translated into the chat completion it asks for and validated by
// openai_protocol's parser, so every constraint (text.format), tool and sampling rule is the chat endpoint's.
// Pure functions on strings: no engine, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

// Parses a Responses request: input (a string, or message items with input_text / output_text parts,
// function_call and function_call_output items), instructions, max_output_tokens, temperature, top_p, stream,
// text.format (text, json_object, json_schema), reasoning.effort (the template's reasoning_effort), function tools, tool_choice, parallel_tool_calls; store, metadata,
// user, service_tier, prompt_cache_key and safety_identifier change nothing and are accepted. previous_response_id
// (this server keeps no responses), reasoning.summary, background, include, non-function tools and the rest are errors
// naming the field. `echo`: the request's settings as the response object repeats them (instructions, model
// settings, text, tools, tool_choice...).
std::optional<ApiError> parse_responses_request(std::string_view body, CompletionParams* out,
                                                nlohmann::ordered_json* echo);

// One output item of a finished response: a reasoning's text, a message's text, or a function call.
struct ResponseOutputItem {
  std::string id;  // "rs_...", "msg_..." or "fc_..."
  bool is_call = false;
  std::string text;     // a message's, or a reasoning's
  std::string call_id;  // a call's ("call_...")
  std::string name;
  std::string arguments;
  bool is_reasoning = false;  // a reasoning item: its text is reasoning_text content
};

// The response object: {"id", "object": "response", "created_at", "status", "model", "output", "usage",
// "incomplete_details", "error": null, ...echo}. `status`: "in_progress", "completed" or "incomplete" (by
// max_output_tokens); usage null while in progress.
nlohmann::ordered_json response_object(const std::string& id, int64_t created_at, const std::string& model,
                                       std::string_view status, const nlohmann::ordered_json& output,
                                       const std::optional<UsageFigures>& usage, const nlohmann::ordered_json& echo);
nlohmann::ordered_json output_item_json(const ResponseOutputItem& item, std::string_view status);

}  // namespace pagoda::server
