// parse_tool_params (tool_params.h).
#include "server/tool_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

// ordered_json: a schema keeps its properties in the order the client wrote them (the output follows it).
using json = nlohmann::ordered_json;

constexpr size_t kMaxTools = 128;

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::optional<ApiError> parse_tool(const json& t, size_t i, ToolFunction* out) {
  const std::string field = fmt::format("tools[{}]", i);
  if (!t.is_object()) return invalid_request(fmt::format("'{}' must be an object", field), field);
  for (const auto& [key, value] : t.items())
    if (key != "type" && key != "function")
      return invalid_request(fmt::format("'{}.{}' is not supported by this server", field, key), field + "." + key);
  if (t.value("type", json()) != "function")
    return invalid_request(fmt::format("'{}.type' must be 'function'", field), field + ".type");
  auto f = t.find("function");
  if (f == t.end() || !f->is_object())
    return invalid_request(fmt::format("'{}.function' must be an object", field), field + ".function");
  for (const auto& [key, value] : f->items())
    if (key != "name" && key != "description" && key != "parameters" && key != "strict")
      return invalid_request(fmt::format("'{}.function.{}' is not supported by this server", field, key),
                             field + ".function." + key);
  auto name = f->find("name");
  if (name == f->end() || !name->is_string() || !valid_function_name(name->get<std::string>()))
    return invalid_request(fmt::format("'{}.function.name' must be 1 to 64 letters, digits, '_' or '-'", field),
                           field + ".function.name");
  out->name = name->get<std::string>();
  if (auto d = f->find("description"); d != f->end() && !d->is_null()) {
    if (!d->is_string())
      return invalid_request(fmt::format("'{}.function.description' must be a string", field),
                             field + ".function.description");
    out->description = d->get<std::string>();
  }
  if (auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean())
    return invalid_request(fmt::format("'{}.function.strict' must be a boolean", field), field + ".function.strict");
  auto params = f->find("parameters");
  if (params == f->end() || params->is_null()) {
    out->parameters = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  } else if (params->is_object()) {
    out->parameters = *params;
  } else {
    return invalid_request(fmt::format("'{}.function.parameters' must be a JSON Schema object", field),
                           field + ".function.parameters");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_tool_params(const nlohmann::ordered_json& body, ToolParams* out) {
  ToolParams p;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_request("'tools' must be an array", "tools");
    if (it->size() > kMaxTools) return invalid_request(fmt::format("at most {} tools", kMaxTools), "tools");
    for (size_t i = 0; i < it->size(); ++i) {
      ToolFunction f;
      if (auto e = parse_tool((*it)[i], i, &f)) return e;
      for (const ToolFunction& other : p.tools)
        if (other.name == f.name)
          return invalid_request(fmt::format("'tools' defines '{}' twice", f.name), fmt::format("tools[{}]", i));
      p.tools.push_back(std::move(f));
    }
  }
  p.choice = p.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    const json& c = *it;
    if (c == "none") {
      p.choice = ToolChoice::kNone;
    } else if (c == "auto" || c == "required") {
      p.choice = c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
    } else if (c.is_object()) {
      auto f = c.find("function");
      if (c.value("type", json()) != "function" || f == c.end() || !f->is_object() || !f->contains("name") ||
          !(*f)["name"].is_string())
        return invalid_request(
            "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\", "
            "\"function\": {\"name\": ...}}",
            "tool_choice");
      p.choice = ToolChoice::kNamed;
      p.named = (*f)["name"].get<std::string>();
    } else {
      return invalid_request("'tool_choice' must be 'none', 'auto', 'required' or a named function", "tool_choice");
    }
    if (p.choice != ToolChoice::kNone && p.tools.empty())
      return invalid_request("'tool_choice' other than 'none' needs 'tools'", "tool_choice");
    if (p.choice == ToolChoice::kNamed &&
        std::none_of(p.tools.begin(), p.tools.end(), [&](const ToolFunction& t) { return t.name == p.named; }))
      return invalid_request(fmt::format("'tool_choice' names '{}', which 'tools' does not define", p.named),
                             "tool_choice");
  }
  if (auto it = body.find("parallel_tool_calls"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    p.parallel_tool_calls = it->get<bool>();
  }
  *out = std::move(p);
  return std::nullopt;
}

}  // namespace pagoda::server
