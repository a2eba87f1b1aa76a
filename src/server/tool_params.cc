// parse_tool_params (tool_params.h).
#include "server/tool_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace pagoda::server {
namespace {

// ordered_json: a schema keeps its properties in the order the client wrote them (the output follows it).
using ordered_json = nlohmann::ordered_json;

constexpr size_t kMaxTools = 128;

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

// A function definition {name, description, parameters, strict}: `field` names it in errors ("tools[0].function",
// or the legacy "functions[0]").
std::optional<ApiError> parse_function(const ordered_json* f, const std::string& field, ToolFunction* out);

std::optional<ApiError> parse_tool(const ordered_json& t, size_t i, ToolFunction* out) {
  const std::string field = fmt::format("tools[{}]", i);
  if (!t.is_object()) return invalid_request(fmt::format("'{}' must be an object", field), field);
  for (const auto& [key, value] : t.items())
    if (key != "type" && key != "function")
      return invalid_request(fmt::format("'{}.{}' is not supported by this server", field, key), field + "." + key);
  if (t.value("type", ordered_json()) != "function")
    return invalid_request(fmt::format("'{}.type' must be 'function'", field), field + ".type");
  auto f = t.find("function");
  if (f == t.end() || !f->is_object())
    return invalid_request(fmt::format("'{}.function' must be an object", field), field + ".function");
  return parse_function(&*f, field + ".function", out);
}

std::optional<ApiError> parse_function(const ordered_json* f, const std::string& field, ToolFunction* out) {
  for (const auto& [key, value] : f->items())
    if (key != "name" && key != "description" && key != "parameters" && key != "strict")
      return invalid_request(fmt::format("'{}.{}' is not supported by this server", field, key), field + "." + key);
  auto name = f->find("name");
  if (name == f->end() || !name->is_string() || !valid_function_name(name->get<std::string>()))
    return invalid_request(fmt::format("'{}.name' must be 1 to 64 letters, digits, '_' or '-'", field),
                           field + ".name");
  out->name = name->get<std::string>();
  if (auto d = f->find("description"); d != f->end() && !d->is_null()) {
    if (!d->is_string())
      return invalid_request(fmt::format("'{}.description' must be a string", field), field + ".description");
    out->description = d->get<std::string>();
  }
  if (auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean())
    return invalid_request(fmt::format("'{}.strict' must be a boolean", field), field + ".strict");
  auto params = f->find("parameters");
  if (params == f->end() || params->is_null()) {
    out->parameters = {{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
  } else if (params->is_object()) {
    out->parameters = *params;
  } else {
    return invalid_request(fmt::format("'{}.parameters' must be a JSON Schema object", field), field + ".parameters");
  }
  return std::nullopt;
}

// Appends `f` to the list named `list` ("tools" or "functions"); a name defined twice is an error at `field`.
std::optional<ApiError> add_function(ToolParams& p, ToolFunction f, std::string_view list, const std::string& field) {
  for (const ToolFunction& other : p.tools)
    if (other.name == f.name) return invalid_request(fmt::format("'{}' defines '{}' twice", list, f.name), field);
  p.tools.push_back(std::move(f));
  return std::nullopt;
}

// A choice (`choice_field`: "tool_choice" or "function_call") other than none needs the list, and a named one must
// be in it.
std::optional<ApiError> check_choice(const ToolParams& p, std::string_view choice_field, std::string_view list) {
  const std::string field(choice_field);
  if (p.choice != ToolChoice::kNone && p.tools.empty())
    return invalid_request(fmt::format("'{}' other than 'none' needs '{}'", field, list), field);
  if (p.choice == ToolChoice::kNamed &&
      std::none_of(p.tools.begin(), p.tools.end(), [&](const ToolFunction& t) { return t.name == p.named; }))
    return invalid_request(fmt::format("'{}' names '{}', which '{}' does not define", field, p.named, list), field);
  return std::nullopt;
}

// The legacy functions API: functions -> tools, function_call -> tool_choice, one call at most.
std::optional<ApiError> parse_legacy_functions(const ordered_json& body, ToolParams* out) {
  ToolParams p;
  p.legacy_functions = true;
  p.parallel_tool_calls = false;
  if (body.contains("tools") && !body["tools"].is_null())
    return invalid_request("give 'functions' (the legacy API) or 'tools', not both", "functions");
  if (body.contains("tool_choice") && !body["tool_choice"].is_null())
    return invalid_request("'tool_choice' goes with 'tools'; with 'functions' use 'function_call'", "tool_choice");
  if (auto it = body.find("functions"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_request("'functions' must be an array", "functions");
    if (it->size() > kMaxTools) return invalid_request(fmt::format("at most {} functions", kMaxTools), "functions");
    for (size_t i = 0; i < it->size(); ++i) {
      const std::string field = fmt::format("functions[{}]", i);
      if (!(*it)[i].is_object()) return invalid_request(fmt::format("'{}' must be an object", field), field);
      ToolFunction f;
      if (auto e = parse_function(&(*it)[i], field, &f)) return e;
      if (auto e = add_function(p, std::move(f), "functions", field)) return e;
    }
  }
  p.choice = p.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (auto it = body.find("function_call"); it != body.end() && !it->is_null()) {
    const ordered_json& c = *it;
    if (c == "none") {
      p.choice = ToolChoice::kNone;
    } else if (c == "auto") {
      p.choice = ToolChoice::kAuto;
    } else if (c.is_object() && c.size() == 1 && c.contains("name") && c["name"].is_string()) {
      p.choice = ToolChoice::kNamed;
      p.named = c["name"].get<std::string>();
    } else {
      return invalid_request("'function_call' must be 'none', 'auto' or {\"name\": ...}", "function_call");
    }
    if (auto e = check_choice(p, "function_call", "functions")) return e;
  }
  if (body.contains("parallel_tool_calls") && !body["parallel_tool_calls"].is_null())
    return invalid_request("'parallel_tool_calls' goes with 'tools'; the legacy functions API makes one call",
                           "parallel_tool_calls");
  *out = std::move(p);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_tool_params(const nlohmann::ordered_json& body, ToolParams* out) {
  if ((body.contains("functions") && !body["functions"].is_null()) ||
      (body.contains("function_call") && !body["function_call"].is_null()))
    return parse_legacy_functions(body, out);
  ToolParams p;
  if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_request("'tools' must be an array", "tools");
    if (it->size() > kMaxTools) return invalid_request(fmt::format("at most {} tools", kMaxTools), "tools");
    for (size_t i = 0; i < it->size(); ++i) {
      ToolFunction f;
      if (auto e = parse_tool((*it)[i], i, &f)) return e;
      if (auto e = add_function(p, std::move(f), "tools", fmt::format("tools[{}]", i))) return e;
    }
  }
  p.choice = p.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    const ordered_json& c = *it;
    if (c == "none") {
      p.choice = ToolChoice::kNone;
    } else if (c == "auto" || c == "required") {
      p.choice = c == "auto" ? ToolChoice::kAuto : ToolChoice::kRequired;
    } else if (c.is_object()) {
      auto f = c.find("function");
      if (c.value("type", ordered_json()) != "function" || f == c.end() || !f->is_object() || !f->contains("name") ||
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
    if (auto e = check_choice(p, "tool_choice", "tools")) return e;
  }
  if (auto it = body.find("parallel_tool_calls"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    p.parallel_tool_calls = it->get<bool>();
  }
  *out = std::move(p);
  return std::nullopt;
}

}  // namespace pagoda::server
