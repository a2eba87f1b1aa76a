// The tool-calling fields of a chat request (OpenAI's tools, tool_choice, parallel_tool_calls): pure parsing
// from the request's JSON into ToolFunctions and the choice, with a 400 naming the field for anything malformed.
// What a choice means for the prompt, the constraint and the response is the ApiServer's and CompletionJob's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "chat/tool_definitions.h"
#include "server/api_error.h"

namespace pagoda::server {

enum class ToolChoice {
  kNone,      // no tool may be called: the tools are not shown to the model and its output is content
  kAuto,      // the model may call tools in its own format; the output is parsed for calls
  kRequired,  // at least one call, forced by grammar (required_tool_calls_schema)
  kNamed,     // one call of `named`, its arguments forced by grammar (the function's parameters schema)
};

struct ToolParams {
  std::vector<ToolFunction> tools;
  ToolChoice choice = ToolChoice::kNone;  // OpenAI's default: auto when tools are given, none without
  std::string named;                      // kNamed: the function
  bool parallel_tool_calls = true;
  // The request used the legacy functions API (functions, function_call): one call at most, answered as
  // message.function_call with finish_reason "function_call".
  bool legacy_functions = false;
  bool active() const { return !tools.empty() && choice != ToolChoice::kNone; }
};

std::optional<ApiError> parse_tool_params(const nlohmann::ordered_json& body, ToolParams* out);

}  // namespace pagoda::server
