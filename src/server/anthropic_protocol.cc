// Anthropic Messages request parsing and response building.
#include "core/ordered_json_parse.h"
#include "server/anthropic_protocol.h"

#include <fmt/format.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <random>

#include "server/json_text.h"

namespace pagoda::server {
namespace {

// Fields of Anthropic's API this server does not implement: named as such in the error.
constexpr std::string_view kUnimplementedMessagesFields[] = {"service_tier", "container", "mcp_servers",
                                                             "context_management", "output_format"};

bool is_unimplemented(std::string_view key) {
  for (std::string_view f : kUnimplementedMessagesFields)
    if (f == key) return true;
  return false;
}

// Only `keys` (and cache_control, a prompt-caching hint the prefix cache makes moot) in a block.
std::optional<ApiError> only_keys(const nlohmann::json& block, const std::string& at,
                                  std::initializer_list<std::string_view> keys) {
  for (const auto& [key, value] : block.items()) {
    bool ok = key == "cache_control" || (key == "citations" && value.is_null());
    for (std::string_view k : keys) ok = ok || key == k;
    if (!ok) return invalid_request(fmt::format("'{}.{}' is not supported by this server", at, key), at + "." + key);
  }
  return std::nullopt;
}

// A content block's type, checked to be a string.
std::optional<ApiError> block_type(const nlohmann::json& block, const std::string& at, std::string* type) {
  if (!block.is_object()) return invalid_request(fmt::format("'{}' must be a content block object", at), at);
  auto it = block.find("type");
  if (it == block.end() || !it->is_string())
    return invalid_request(fmt::format("'{}.type' must be a string", at), at + ".type");
  *type = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> text_block(const nlohmann::json& block, const std::string& at, std::string* out) {
  if (auto e = only_keys(block, at, {"type", "text"})) return e;
  auto text = block.find("text");
  if (text == block.end() || !text->is_string())
    return invalid_request(fmt::format("'{}.text' must be a string", at), at + ".text");
  *out += text->get<std::string>();
  return std::nullopt;
}

// A string, or an array of text blocks joined; `field` names it.
std::optional<ApiError> text_content(const nlohmann::json& content, const std::string& field, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return invalid_request(fmt::format("'{}' must be a string or an array of content blocks", field), field);
  for (size_t j = 0; j < content.size(); ++j) {
    const std::string at = fmt::format("{}[{}]", field, j);
    std::string type;
    if (auto e = block_type(content[j], at, &type)) return e;
    if (type != "text")
      return invalid_request(fmt::format("'{}.type' is '{}': this server takes text blocks here", at, type),
                             at + ".type");
    if (auto e = text_block(content[j], at, out)) return e;
  }
  return std::nullopt;
}

// A turn's content: text blocks (joined into msg->content), an assistant's tool_use blocks (its calls), a user's
// tool_result blocks (each a "tool" message, in `results`, that goes before the turn's text).
std::optional<ApiError> turn_content(const nlohmann::json& content, const std::string& field, ChatMessage* msg,
                                     std::vector<ChatMessage>* results) {
  if (content.is_string()) {
    msg->content = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return invalid_request(fmt::format("'{}' must be a string or an array of content blocks", field), field);
  const bool assistant = msg->role == "assistant";
  for (size_t j = 0; j < content.size(); ++j) {
    const nlohmann::json& block = content[j];
    const std::string at = fmt::format("{}[{}]", field, j);
    std::string type;
    if (auto e = block_type(block, at, &type)) return e;
    if (type == "text") {
      if (auto e = text_block(block, at, &msg->content)) return e;
    } else if ((type == "thinking" || type == "redacted_thinking") && assistant) {
      // An earlier turn's thinking: left out of the prompt, as Anthropic's API and the chat templates leave it.
    } else if (type == "tool_use" && assistant) {
      if (auto e = only_keys(block, at, {"type", "id", "name", "input"})) return e;
      if (!block.contains("id") || !block["id"].is_string() || !block.contains("name") || !block["name"].is_string() ||
          !block.contains("input") || !block["input"].is_object())
        return invalid_request(fmt::format("'{}' must have an id, a name and an input object", at), at);
      msg->tool_calls.push_back(
          {block["id"].get<std::string>(), block["name"].get<std::string>(), block["input"].dump()});
    } else if (type == "tool_result" && !assistant) {
      if (auto e = only_keys(block, at, {"type", "tool_use_id", "content", "is_error"})) return e;
      if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string())
        return invalid_request(fmt::format("'{}.tool_use_id' must be a string", at), at + ".tool_use_id");
      ChatMessage result{"tool", {}};
      result.tool_call_id = block["tool_use_id"].get<std::string>();
      if (block.contains("content") && !block["content"].is_null())
        if (auto e = text_content(block["content"], at + ".content", &result.content)) return e;
      if (block.contains("is_error") && !block["is_error"].is_null()) {
        if (!block["is_error"].is_boolean())
          return invalid_request(fmt::format("'{}.is_error' must be a boolean", at), at + ".is_error");
        // The model reads that the call failed as a person would: the result says so.
        if (block["is_error"].get<bool>()) result.content = "Error: " + result.content;
      }
      results->push_back(std::move(result));
    } else {
      return invalid_request(fmt::format("'{}.type' is '{}': this server takes text{} blocks here", at, type,
                                         assistant ? " and tool_use" : " and tool_result"),
                             at + ".type");
    }
  }
  return std::nullopt;
}

// Anthropic's tools and tool_choice, as the chat endpoint's tool fields (parse_tool_params validates them); the
// error names the Anthropic field.
std::optional<ApiError> parse_anthropic_tools(std::string_view body_text, ToolParams* out) {
  // The schemas keep their properties' order (a forced call writes them in that order).
  const nlohmann::ordered_json body = parse_ordered_json(body_text).value_or(nullptr);
  nlohmann::ordered_json chat = nlohmann::ordered_json::object();
  if (body.contains("tools") && !body["tools"].is_null()) {
    const nlohmann::ordered_json& tools = body["tools"];
    if (!tools.is_array()) return invalid_request("'tools' must be an array", "tools");
    nlohmann::ordered_json functions = nlohmann::ordered_json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
      const nlohmann::ordered_json& t = tools[i];
      const std::string at = fmt::format("tools[{}]", i);
      if (!t.is_object()) return invalid_request(fmt::format("'{}' must be an object", at), at);
      if (t.contains("type") && !t["type"].is_null() && t["type"] != "custom")
        return invalid_request(fmt::format("'{}.type' is {}: this server runs no server tools; give client tools "
                                           "(name, description, input_schema)",
                                           at, t["type"].dump()),
                               at + ".type");
      nlohmann::ordered_json function = nlohmann::ordered_json::object();
      for (const auto& [key, value] : t.items()) {
        if (key == "name" || key == "description") {
          function[key] = value;
        } else if (key == "input_schema") {
          function["parameters"] = value;
        } else if (key != "type" && key != "cache_control") {
          return invalid_request(fmt::format("'{}.{}' is not supported by this server", at, key), at + "." + key);
        }
      }
      if (!function.contains("parameters"))
        return invalid_request(fmt::format("'{}.input_schema' is required", at), at + ".input_schema");
      functions.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    chat["tools"] = std::move(functions);
  }
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const nlohmann::ordered_json& choice = body["tool_choice"];
    if (!choice.is_object() || !choice.contains("type") || !choice["type"].is_string())
      return invalid_request("'tool_choice' must be an object with a type (auto, any, tool, none)", "tool_choice");
    const std::string type = choice["type"];
    for (const auto& [key, value] : choice.items())
      if (key != "type" && key != "name" && key != "disable_parallel_tool_use")
        return invalid_request(fmt::format("'tool_choice.{}' is not supported by this server", key),
                               "tool_choice." + key);
    if (type == "auto" || type == "none") {
      chat["tool_choice"] = type;
    } else if (type == "any") {
      chat["tool_choice"] = "required";
    } else if (type == "tool") {
      if (!choice.contains("name") || !choice["name"].is_string())
        return invalid_request("'tool_choice.name' is required with type \"tool\"", "tool_choice.name");
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
    } else {
      return invalid_request(fmt::format("'tool_choice.type' is '{}'; expected auto, any, tool or none", type),
                             "tool_choice.type");
    }
    if (choice.contains("disable_parallel_tool_use") && !choice["disable_parallel_tool_use"].is_null()) {
      if (!choice["disable_parallel_tool_use"].is_boolean())
        return invalid_request("'tool_choice.disable_parallel_tool_use' must be a boolean",
                               "tool_choice.disable_parallel_tool_use");
      chat["parallel_tool_calls"] = !choice["disable_parallel_tool_use"].get<bool>();
    }
  }
  if (std::optional<ApiError> e = parse_tool_params(chat, out)) {
    if (e->param) {
      std::string& param = *e->param;
      for (auto [from, to] :
           {std::pair<std::string_view, std::string_view>{".function.parameters", ".input_schema"}, {".function", ""}})
        if (const size_t at = param.find(from); at != std::string::npos) param.replace(at, from.size(), to);
      if (param == "parallel_tool_calls") param = "tool_choice.disable_parallel_tool_use";
    }
    return e;
  }
  return std::nullopt;
}

std::optional<ApiError> number_in(const nlohmann::json& body, const char* field, double lo, double hi, bool lo_open,
                                  double* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return invalid_request(fmt::format("'{}' must be a number", field), field);
  const double v = it->get<double>();
  if (!((lo_open ? v > lo : v >= lo) && v <= hi))
    return invalid_request(fmt::format("'{}' must be in {}{}, {}], got {}", field, lo_open ? "(" : "[", lo, hi, v),
                           field);
  *out = v;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_anthropic_messages(std::string_view body_text, CompletionParams* out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  for (const auto& [key, value] : body.items()) {
    if (key == "model" || key == "max_tokens" || key == "messages" || key == "system" || key == "temperature" ||
        key == "top_p" || key == "top_k" || key == "stop_sequences" || key == "stream" || key == "metadata" ||
        key == "tools" || key == "tool_choice" || key == "thinking")
      continue;
    if (is_unimplemented(key))
      return invalid_request(fmt::format("'{}' is not supported by this server's /v1/messages endpoint", key), key);
    return invalid_request(fmt::format("{}: Extra inputs are not permitted", key), key);
  }
  CompletionParams p;
  p.chat = true;
  p.sampling.temperature = 1.0f;  // Anthropic's defaults
  p.sampling.top_p = 1.0f;
  auto model = body.find("model");
  if (model == body.end() || !model->is_string()) return invalid_request("'model' (a string) is required", "model");
  p.model = model->get<std::string>();
  auto max_tokens = body.find("max_tokens");
  if (max_tokens == body.end() || !(max_tokens->is_number_integer() || max_tokens->is_number_unsigned()))
    return invalid_request("'max_tokens' (an integer) is required", "max_tokens");
  if (max_tokens->get<int64_t>() < 1) return invalid_request("'max_tokens' must be at least 1", "max_tokens");
  p.max_tokens_given = true;
  p.sampling.max_tokens = int32_t(std::min<int64_t>(max_tokens->get<int64_t>(), INT32_MAX));

  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    ChatMessage system{"system", {}, {}, {}, {}};
    if (auto e = text_content(*it, "system", &system.content)) return e;
    p.messages.push_back(std::move(system));
  }
  auto messages = body.find("messages");
  if (messages == body.end() || !messages->is_array() || messages->empty())
    return invalid_request("'messages' (a non-empty array) is required", "messages");
  for (size_t i = 0; i < messages->size(); ++i) {
    const nlohmann::json& m = (*messages)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) return invalid_request(fmt::format("'{}' must be an object", field), field);
    for (const auto& [key, value] : m.items())
      if (key != "role" && key != "content")
        return invalid_request(fmt::format("'{}.{}' is not supported by this server", field, key), field + "." + key);
    auto role = m.find("role");
    if (role == m.end() || (*role != "user" && *role != "assistant"))
      return invalid_request(fmt::format("'{}.role' must be \"user\" or \"assistant\"", field), field + ".role");
    auto content = m.find("content");
    if (content == m.end()) return invalid_request(fmt::format("'{}.content' is required", field), field + ".content");
    ChatMessage msg{role->get<std::string>(), {}};
    std::vector<ChatMessage> results;
    if (auto e = turn_content(*content, field + ".content", &msg, &results)) return e;
    for (ChatMessage& r : results) p.messages.push_back(std::move(r));
    // A user turn of tool results only is those results; any other turn is kept, even empty.
    if (results.empty() || !msg.content.empty()) p.messages.push_back(std::move(msg));
  }
  if (p.messages.back().role == "assistant")
    return invalid_request(
        fmt::format("'messages[{}]' is an assistant turn to continue (prefill), which this server does not support: "
                    "end with a user turn",
                    messages->size() - 1),
        fmt::format("messages[{}]", messages->size() - 1));

  double temperature = 1.0, top_p = 1.0;
  if (auto e = number_in(body, "temperature", 0.0, 1.0, false, &temperature)) return e;
  if (auto e = number_in(body, "top_p", 0.0, 1.0, true, &top_p)) return e;
  p.sampling.temperature = float(temperature);
  p.sampling.top_p = float(top_p);
  if (auto it = body.find("top_k"); it != body.end() && !it->is_null()) {
    if (!(it->is_number_integer() || it->is_number_unsigned()) || it->get<int64_t>() < 1 ||
        it->get<int64_t>() > INT32_MAX)
      return invalid_request("'top_k' must be a positive integer", "top_k");
    p.sampling.top_k = int32_t(it->get<int64_t>());
  }
  if (auto it = body.find("stop_sequences"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return invalid_request("'stop_sequences' must be an array of strings", "stop_sequences");
    for (const nlohmann::json& s : *it) {
      if (!s.is_string() || s.get<std::string>().empty())
        return invalid_request("'stop_sequences' must hold non-empty strings", "stop_sequences");
      p.sampling.stop.push_back(s.get<std::string>());
    }
    if (int32_t(p.sampling.stop.size()) > kMaxStops)
      return invalid_request(fmt::format("at most {} stop_sequences", kMaxStops), "stop_sequences");
  }
  if (auto it = body.find("thinking"); it != body.end() && !it->is_null()) {
    // {type: enabled, budget_tokens} or {type: disabled}: the template's enable_thinking. The budget is checked,
    // not enforced: max_tokens bounds the whole reply.
    const nlohmann::json& t = *it;
    const std::string type = t.is_object() && t.contains("type") && t["type"].is_string() ? t["type"] : "";
    if (type != "enabled" && type != "disabled")
      return invalid_request("'thinking.type' must be \"enabled\" or \"disabled\"", "thinking.type");
    if (auto e = only_keys(t, "thinking", {"type", "budget_tokens"})) return e;
    if (type == "enabled") {
      auto budget = t.find("budget_tokens");
      if (budget == t.end() || !(budget->is_number_integer() || budget->is_number_unsigned()) ||
          budget->get<int64_t>() < 1)
        return invalid_request("'thinking.budget_tokens' (a positive integer) is required with thinking enabled",
                               "thinking.budget_tokens");
    }
    p.enable_thinking = type == "enabled";
  }
  if (auto it = body.find("stream"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'stream' must be a boolean", "stream");
    p.stream = it->get<bool>();
  }
  if (auto e = parse_anthropic_tools(body_text, &p.tools)) return e;
  if (auto it = body.find("metadata"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return invalid_request("'metadata' must be an object", "metadata");
    for (const auto& [key, value] : it->items())
      if (key != "user_id" || !(value.is_string() || value.is_null()))
        return invalid_request(fmt::format("'metadata.{}' is not supported by this server", key), "metadata." + key);
  }
  *out = std::move(p);
  return std::nullopt;
}

std::optional<ApiError> parse_anthropic_count_tokens(std::string_view body_text, CompletionParams* out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  for (const auto& [key, value] : body.items())
    if (key != "model" && key != "messages" && key != "system" && key != "tools" && key != "tool_choice")
      return invalid_request(fmt::format("{}: Extra inputs are not permitted", key), key);
  body["max_tokens"] = 1;  // nothing is generated; the Messages parser wants one
  return parse_anthropic_messages(json_text(body), out);
}

std::string_view anthropic_stop_reason(FinishReason reason, const std::string& stop_string, bool called_tools) {
  if (reason == FinishReason::kLength) return "max_tokens";
  if (called_tools) return "tool_use";
  return stop_string.empty() ? "end_turn" : "stop_sequence";
}

nlohmann::json tool_input(const std::string& arguments) {
  nlohmann::json input = nlohmann::json::parse(arguments, nullptr, false);
  // A call cut short by max_tokens is no object: its text goes back as it is, under Anthropic's field.
  return input.is_object() ? input : nlohmann::json{{"_unparsed_arguments", arguments}};
}

std::string anthropic_error_json(const ApiError& error) {
  std::string type;
  switch (error.http_status) {
    case 400: type = "invalid_request_error"; break;
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 408: type = "timeout_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: type = "overloaded_error"; break;
    default: type = error.http_status < 500 ? "invalid_request_error" : "api_error"; break;
  }
  return json_text({{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}});
}

HttpResponse anthropic_error_response(const ApiError& error) {
  HttpResponse r = error.to_response();  // its status and headers (x-should-retry)
  r.body = anthropic_error_json(error);
  return r;
}

std::string anthropic_message(const std::string& id, const std::string& model, const ChoiceResult& choice,
                              const UsageFigures& usage) {
  nlohmann::json content = nlohmann::json::array();
  // No signature: this server signs nothing (a thinking block sent back is dropped, not checked).
  if (!choice.reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", choice.reasoning}, {"signature", ""}});
  if (!choice.text.empty()) content.push_back({{"type", "text"}, {"text", choice.text}});
  for (const ToolCall& call : choice.tool_calls)
    content.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", tool_input(call.arguments)}});
  const FinishReason reason = choice.finish_reason.value_or(FinishReason::kLength);
  return json_text(
      {{"id", id},
       {"type", "message"},
       {"role", "assistant"},
       {"model", model},
       {"content", std::move(content)},
       {"stop_reason", std::string(anthropic_stop_reason(reason, choice.stop_string, choice.called_tools))},
       {"stop_sequence", choice.stop_string.empty() ? nlohmann::json(nullptr) : nlohmann::json(choice.stop_string)},
       {"usage", {{"input_tokens", usage.prompt_tokens}, {"output_tokens", usage.completion_tokens}}}});
}

std::string anthropic_event(std::string_view name, const nlohmann::json& data) {
  return fmt::format("event: {}\ndata: {}\n\n", name, json_text(data));
}

}  // namespace pagoda::server
