// Tool definitions: the template value, the default tool prompt and the forcing schemas (tool_definitions.h).
#include "chat/tool_definitions.h"

namespace pagoda {

nlohmann::ordered_json tools_json(std::span<const ToolFunction> tools) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ToolFunction& t : tools) {
    nlohmann::ordered_json f = {{"name", t.name}};
    if (!t.description.empty()) f["description"] = t.description;
    f["parameters"] = t.parameters;
    list.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  return list;
}

std::string default_tool_prompt(std::span<const ToolFunction> tools) {
  // Hermes' format (Qwen 2.5 and Hermes models were trained on it), in few words: a prompt of a model without tool
  // support in its template should leave room for the conversation.
  std::string out = "You may call these functions, given as JSON signatures:\n<tools>";
  for (const nlohmann::ordered_json& t : tools_json(tools)) {
    out += '\n';
    out += t["function"].dump();
  }
  out +=
      "\n</tools>\nTo call one, reply with <tool_call>{\"name\": <function-name>, \"arguments\": <args-json-object>}"
      "</tool_call> for each call.";
  return out;
}

nlohmann::ordered_json arguments_schema(const ToolFunction& tool) {
  if (!tool.parameters.is_object() || tool.parameters.contains("type")) return tool.parameters;
  nlohmann::ordered_json schema = {{"type", "object"}};
  for (const auto& [key, value] : tool.parameters.items()) schema[key] = value;
  return schema;
}

nlohmann::ordered_json required_tool_calls_schema(std::span<const ToolFunction> tools, bool parallel_tool_calls) {
  nlohmann::ordered_json one_of = nlohmann::ordered_json::array();
  for (const ToolFunction& t : tools) {
    one_of.push_back({{"type", "object"},
                      {"properties", {{"name", {{"const", t.name}}}, {"arguments", arguments_schema(t)}}},
                      {"required", {"name", "arguments"}},
                      {"additionalProperties", false}});
  }
  nlohmann::ordered_json schema = {{"type", "array"}, {"minItems", 1}};
  if (!parallel_tool_calls) schema["maxItems"] = 1;
  schema["items"] = one_of.size() == 1 ? one_of[0] : nlohmann::ordered_json{{"anyOf", one_of}};
  return schema;
}


}  // namespace pagoda
