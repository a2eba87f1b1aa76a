// Responses API request translation and response objects.
#include "core/ordered_json_parse.h"
#include "server/responses_protocol.h"

#include <fmt/format.h>

#include <atomic>
#include <random>
#include <span>
#include <utility>

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

// Known to the Responses API but not implemented here: named as such in the error.
constexpr std::string_view kUnimplementedResponsesFields[] = {
    "background", "top_logprobs", "max_tool_calls", "prompt", "conversation", "stream_options"};
// Accepted: they cannot change the output.
constexpr std::string_view kHarmlessResponsesFields[] = {"store",        "metadata",         "user",
                                                         "service_tier", "prompt_cache_key", "safety_identifier"};

bool listed(std::span<const std::string_view> list, std::string_view key) {
  for (std::string_view f : list)
    if (f == key) return true;
  return false;
}

// A message item's content: a string, or input_text / output_text parts joined.
std::optional<ApiError> item_text(const ojson& content, const std::string& field, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array())
    return invalid_request(fmt::format("'{}' must be a string or an array of content parts", field), field);
  for (size_t j = 0; j < content.size(); ++j) {
    const ojson& part = content[j];
    const std::string at = fmt::format("{}[{}]", field, j);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return invalid_request(fmt::format("'{}' must be a content part with a type", at), at);
    const std::string type = part["type"];
    if (type != "input_text" && type != "output_text")
      return invalid_request(
          fmt::format("'{}.type' is '{}': this server takes input_text and output_text parts only", at, type),
          at + ".type");
    for (const auto& [key, value] : part.items())
      if (key != "type" && key != "text" && !(key == "annotations" && (value.is_array() && value.empty())) &&
          !(key == "logprobs" && value.is_array()))
        return invalid_request(fmt::format("'{}.{}' is not supported by this server", at, key), at + "." + key);
    if (!part.contains("text") || !part["text"].is_string())
      return invalid_request(fmt::format("'{}.text' must be a string", at), at + ".text");
    *out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

// The input items as chat messages (appended to `messages`).
std::optional<ApiError> input_messages(const ojson& input, ojson* messages) {
  if (input.is_string()) {
    messages->push_back({{"role", "user"}, {"content", input}});
    return std::nullopt;
  }
  if (!input.is_array() || input.empty())
    return invalid_request("'input' must be a string or a non-empty array of items", "input");
  // A reasoning item's text goes with the assistant turn after it (the template decides whether it shows).
  std::string reasoning;
  const auto take_reasoning = [&reasoning](ojson& message) {
    if (!reasoning.empty()) message["reasoning_content"] = std::exchange(reasoning, {});
  };
  for (size_t i = 0; i < input.size(); ++i) {
    const ojson& item = input[i];
    const std::string field = fmt::format("input[{}]", i);
    if (!item.is_object()) return invalid_request(fmt::format("'{}' must be an object", field), field);
    const std::string type =
        item.contains("type") && item["type"].is_string() ? item["type"].get<std::string>() : std::string("message");
    auto only = [&](std::initializer_list<std::string_view> keys) -> std::optional<ApiError> {
      for (const auto& [key, value] : item.items()) {
        bool ok = value.is_null();
        for (std::string_view k : keys) ok = ok || key == k;
        if (!ok)
          return invalid_request(fmt::format("'{}.{}' is not supported by this server", field, key), field + "." + key);
      }
      return std::nullopt;
    };
    if (type == "message") {
      if (auto e = only({"type", "role", "content", "id", "status"})) return e;
      if (!item.contains("role") || !item["role"].is_string())
        return invalid_request(fmt::format("'{}.role' must be a string", field), field + ".role");
      const std::string role = item["role"];
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        return invalid_request(
            fmt::format("'{}.role' is '{}'; expected user, assistant, system or developer", field, role),
            field + ".role");
      if (!item.contains("content")) return invalid_request(fmt::format("'{}.content' is required", field), field);
      std::string text;
      if (auto e = item_text(item["content"], field + ".content", &text)) return e;
      messages->push_back({{"role", role}, {"content", text}});
      if (role == "assistant") take_reasoning(messages->back());
    } else if (type == "reasoning") {
      if (auto e = only({"type", "id", "summary", "content", "status", "encrypted_content"})) return e;
      if (item.contains("content") && !item["content"].is_null()) {
        if (!item["content"].is_array())
          return invalid_request(fmt::format("'{}.content' must be an array of reasoning_text parts", field),
                                 field + ".content");
        for (const ojson& part : item["content"]) {
          if (!part.is_object() || part.value("type", "") != "reasoning_text" || !part.contains("text") ||
              !part["text"].is_string())
            return invalid_request(fmt::format("'{}.content' must be an array of reasoning_text parts", field),
                                   field + ".content");
          reasoning += part["text"].get<std::string>();
        }
      }
    } else if (type == "function_call") {
      if (auto e = only({"type", "call_id", "name", "arguments", "id", "status"})) return e;
      if (!item.contains("name") || !item["name"].is_string() || !item.contains("arguments") ||
          !item["arguments"].is_string() || !item.contains("call_id") || !item["call_id"].is_string())
        return invalid_request(fmt::format("'{}' must have a call_id, a name and arguments (a JSON string)", field),
                               field);
      const ojson call = {{"id", item["call_id"]},
                          {"type", "function"},
                          {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
      // Consecutive calls are one assistant turn, as the model made them.
      if (!messages->empty() && messages->back()["role"] == "assistant" && messages->back().contains("tool_calls"))
        messages->back()["tool_calls"].push_back(call);
      else
        messages->push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({call})}});
      take_reasoning(messages->back());
    } else if (type == "function_call_output") {
      if (auto e = only({"type", "call_id", "output", "id", "status"})) return e;
      if (!item.contains("call_id") || !item["call_id"].is_string() || !item.contains("output") ||
          !item["output"].is_string())
        return invalid_request(fmt::format("'{}' must have a call_id and an output string", field), field);
      messages->push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", item["output"]}});
    } else {
      return invalid_request(fmt::format("'{}.type' is '{}': this server takes message, reasoning, function_call "
                                         "and function_call_output items",
                                         field, type),
                             field + ".type");
    }
  }
  return std::nullopt;
}

// The chat parser's field names back into the Responses request's.
std::optional<std::string> responses_param(const std::optional<std::string>& chat_param) {
  if (!chat_param) return chat_param;
  const std::string& p = *chat_param;
  if (p == "max_tokens" || p == "max_completion_tokens") return "max_output_tokens";
  if (p.starts_with("response_format")) {
    std::string rest = p.substr(std::string("response_format").size());
    if (rest.starts_with(".json_schema")) rest = rest.substr(std::string(".json_schema").size());
    return "text.format" + rest;
  }
  if (p.starts_with("messages")) return "input";
  if (p == "reasoning_effort") return "reasoning.effort";
  if (p.starts_with("tools[")) {
    std::string out = p;
    if (const size_t at = out.find(".function"); at != std::string::npos)
      out.erase(at, std::string(".function").size());
    return out;
  }
  return p;
}

// The same renaming inside an error's message.
std::string responses_message(std::string message) {
  auto replace_all = [&](std::string_view from, std::string_view to) {
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  };
  replace_all("response_format.json_schema", "text.format");
  replace_all("response_format", "text.format");
  replace_all("'max_tokens'", "'max_output_tokens'");
  replace_all("'reasoning_effort'", "'reasoning.effort'");
  replace_all("max_tokens", "max_output_tokens");
  return message;
}

}  // namespace

std::optional<ApiError> parse_responses_request(std::string_view body_text, CompletionParams* out, ojson* echo) {
  nlohmann::json depth_checked;
  if (auto e = parse_json_object(body_text, &depth_checked)) return e;
  const ojson body = parse_ordered_json(body_text).value_or(nullptr);  // schemas keep their properties' order
  if (!body.is_object()) return invalid_request("the request body must be a JSON object");
  constexpr std::string_view kOwn[] = {"model",
                                       "input",
                                       "instructions",
                                       "max_output_tokens",
                                       "temperature",
                                       "top_p",
                                       "stream",
                                       "text",
                                       "tools",
                                       "tool_choice",
                                       "parallel_tool_calls",
                                       "truncation",
                                       "previous_response_id",
                                       "reasoning",
                                       "include"};
  for (const auto& [key, value] : body.items()) {
    if (listed(kOwn, key) || listed(kHarmlessResponsesFields, key)) continue;
    if (listed(kUnimplementedResponsesFields, key))
      return invalid_request(fmt::format("'{}' is not supported by this server's /v1/responses endpoint", key), key);
    return invalid_request(fmt::format("Unrecognized request argument supplied: {}", key), key);
  }
  auto present = [&](const char* field) { return body.contains(field) && !body[field].is_null(); };
  if (present("previous_response_id"))
    return invalid_request(
        "'previous_response_id' is not supported: this server keeps no responses; send the whole conversation "
        "as 'input'",
        "previous_response_id");
  // include asks for more of items this server never makes (hosted tools' results, images, reasoning): those
  // add nothing here. Logprobs would, and are not implemented.
  if (present("include")) {
    static constexpr std::string_view kNothingToAdd[] = {
        "file_search_call.results",        "web_search_call.results",          "web_search_call.action.sources",
        "message.input_image.image_url",   "computer_call_output.output.image_url", "code_interpreter_call.outputs",
        "reasoning.encrypted_content"};
    if (!body["include"].is_array()) return invalid_request("'include' must be an array of strings", "include");
    for (const ojson& v : body["include"]) {
      if (!v.is_string()) return invalid_request("'include' must be an array of strings", "include");
      if (!listed(kNothingToAdd, v.get<std::string>()))
        return invalid_request(fmt::format("'include' value '{}' is not supported by this server", v.get<std::string>()),
                               "include");
    }
  }
  if (present("truncation") && body["truncation"] != "disabled")
    return invalid_request("'truncation' other than \"disabled\" is not supported by this server", "truncation");

  ojson chat = ojson::object();
  ojson messages = ojson::array();
  if (present("instructions")) {
    if (!body["instructions"].is_string()) return invalid_request("'instructions' must be a string", "instructions");
    messages.push_back({{"role", "system"}, {"content", body["instructions"]}});
  }
  if (!present("input")) return invalid_request("'input' is required", "input");
  if (auto e = input_messages(body["input"], &messages)) return e;
  chat["messages"] = std::move(messages);
  for (const char* field : {"model", "temperature", "top_p", "stream", "parallel_tool_calls"})
    if (body.contains(field)) chat[field] = body[field];
  if (body.contains("max_output_tokens")) chat["max_tokens"] = body["max_output_tokens"];
  ojson format = {{"type", "text"}};
  if (present("text")) {
    const ojson& text = body["text"];
    if (!text.is_object()) return invalid_request("'text' must be an object", "text");
    for (const auto& [key, value] : text.items())
      if (key != "format" && !value.is_null())
        return invalid_request(fmt::format("'text.{}' is not supported by this server", key), "text." + key);
    if (text.contains("format") && !text["format"].is_null()) {
      format = text["format"];
      if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
        return invalid_request("'text.format' must be an object with a type", "text.format");
      const std::string type = format["type"];
      if (type == "json_object") {
        chat["response_format"] = {{"type", "json_object"}};
      } else if (type == "json_schema") {
        ojson schema = ojson::object();
        for (const auto& [key, value] : format.items())
          if (key != "type") schema[key] = value;
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
      } else if (type != "text") {
        return invalid_request(
            fmt::format("'text.format.type' is '{}'; expected text, json_object or json_schema", type),
            "text.format.type");
      }
    }
  }
  if (present("tools")) {
    if (!body["tools"].is_array()) return invalid_request("'tools' must be an array", "tools");
    ojson tools = ojson::array();
    for (size_t i = 0; i < body["tools"].size(); ++i) {
      const ojson& t = body["tools"][i];
      const std::string at = fmt::format("tools[{}]", i);
      if (!t.is_object() || t.value("type", "") != "function")
        return invalid_request(fmt::format("'{}' must be a function tool: this server runs no built-in tools", at),
                               at + ".type");
      ojson function = ojson::object();
      for (const auto& [key, value] : t.items())
        if (key != "type") function[key] = value;
      tools.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    chat["tools"] = std::move(tools);
  }
  if (present("tool_choice")) {
    const ojson& choice = body["tool_choice"];
    if (choice.is_object() && choice.value("type", "") == "function" && choice.contains("name"))
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
    else
      chat["tool_choice"] = choice;
  }
  if (present("reasoning")) {
    // {effort, summary}: the effort is the template's reasoning_effort; no summaries are written (the reasoning
    // itself comes back whole, as a reasoning item's reasoning_text).
    const ojson& reasoning = body["reasoning"];
    if (!reasoning.is_object()) return invalid_request("'reasoning' must be an object", "reasoning");
    for (const auto& [key, value] : reasoning.items()) {
      if (value.is_null()) continue;
      if (key == "effort")
        chat["reasoning_effort"] = value;
      else if (key == "summary" || key == "generate_summary")
        return invalid_request(fmt::format("'reasoning.{}': this server writes no reasoning summaries; the "
                                           "reasoning comes back whole as reasoning_text",
                                           key),
                               "reasoning." + key);
      else
        return invalid_request(fmt::format("'reasoning.{}' is not supported by this server", key), "reasoning." + key);
    }
  }
  CompletionParams p;
  if (std::optional<ApiError> e = parse_completion_params(chat.dump(), true, &p)) {
    e->param = responses_param(e->param);
    e->message = responses_message(std::move(e->message));
    return e;
  }
  if (p.constraint) p.constraint->param = responses_param(p.constraint->param).value_or("text.format");
  *echo = {{"instructions", present("instructions") ? body["instructions"] : ojson(nullptr)},
           {"max_output_tokens", present("max_output_tokens") ? body["max_output_tokens"] : ojson(nullptr)},
           {"temperature", p.sampling.temperature},
           {"top_p", p.sampling.top_p},
           {"text", {{"format", format}}},
           {"tools", present("tools") ? body["tools"] : ojson::array()},
           {"tool_choice", present("tool_choice") ? body["tool_choice"] : ojson("auto")},
           {"parallel_tool_calls", present("parallel_tool_calls") ? body["parallel_tool_calls"] : ojson(true)},
           {"previous_response_id", nullptr},
           {"truncation", "disabled"},
           {"store", false},
           {"metadata", present("metadata") ? body["metadata"] : ojson::object()}};
  p.reasoning_effort_param = "reasoning.effort";
  if (present("reasoning")) (*echo)["reasoning"] = body["reasoning"];
  *out = std::move(p);
  return std::nullopt;
}

ojson output_item_json(const ResponseOutputItem& item, std::string_view status) {
  if (item.is_reasoning) {
    ojson content = ojson::array();
    if (status != "in_progress") content.push_back({{"type", "reasoning_text"}, {"text", item.text}});
    return {{"type", "reasoning"}, {"id", item.id}, {"summary", ojson::array()}, {"content", content},
            {"status", status}};
  }
  if (item.is_call)
    return {{"type", "function_call"},     {"id", item.id},   {"call_id", item.call_id}, {"name", item.name},
            {"arguments", item.arguments}, {"status", status}};
  ojson content = ojson::array();
  if (status != "in_progress")
    content.push_back({{"type", "output_text"}, {"text", item.text}, {"annotations", ojson::array()}});
  return {{"type", "message"}, {"id", item.id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

ojson response_object(const std::string& id, int64_t created_at, const std::string& model, std::string_view status,
                      const ojson& output, const std::optional<UsageFigures>& usage, const ojson& echo) {
  ojson r = {
      {"id", id},
      {"object", "response"},
      {"created_at", created_at},
      {"status", status},
      {"model", model},
      {"output", output},
      {"error", nullptr},
      {"incomplete_details", status == "incomplete" ? ojson({{"reason", "max_output_tokens"}}) : ojson(nullptr)}};
  for (const auto& [key, value] : echo.items()) r[key] = value;
  if (usage)
    r["usage"] = {{"input_tokens", usage->prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", usage->cached_tokens}}},
                  {"output_tokens", usage->completion_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", usage->reasoning_tokens}}},
                  {"total_tokens", usage->prompt_tokens + usage->completion_tokens}};
  else
    r["usage"] = nullptr;
  return r;
}

}  // namespace pagoda::server
