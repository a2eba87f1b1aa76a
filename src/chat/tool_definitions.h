// Tools as a chat request defines them (OpenAI's `tools`: functions with a JSON Schema of their parameters), the
// calls a model makes to them, and what a prompt and a constraint need of them: the `tools` value a model's own
// template renders, a default tool prompt for templates without tool support (Hermes' <tool_call> format, which
// tool_call_parser.h reads back), and the JSON Schemas that force a call (tool_choice "required" or a named
// function). Plain values and pure functions; the server parses requests into them.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pagoda {

struct ToolFunction {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  // a JSON Schema; an object schema with no properties when the request had none
};

struct ToolCall {
  std::string id;  // call_...: empty from the parsers here; the server names each call (its one id generator)
  std::string name;
  std::string arguments;  // a JSON object, as text
};

// OpenAI's `tools` array ([{type: function, function: {name, description, parameters}}]), as templates take it.
nlohmann::ordered_json tools_json(std::span<const ToolFunction> tools);

// The system text that tells a model without tool support in its template which tools exist and how to call them:
// one <tool_call>{"name": ..., "arguments": {...}}</tool_call> per call. Short: it is part of every such prompt.
std::string default_tool_prompt(std::span<const ToolFunction> tools);

// The schema a call's arguments are generated under: the function's parameters, and an object whatever else they
// say (a schema without `type` admits any JSON value, but every API's call arguments are an object).
nlohmann::ordered_json arguments_schema(const ToolFunction& tool);

// The output of a forced call. A named function: its arguments object (the function's parameters schema).
// "required": a JSON array of one call or more ([{"name": ..., "arguments": {...}}], at most one without
// parallel calls), each item one of the tools.
nlohmann::ordered_json required_tool_calls_schema(std::span<const ToolFunction> tools, bool parallel_tool_calls);

}  // namespace pagoda
