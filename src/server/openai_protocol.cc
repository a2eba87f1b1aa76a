// OpenAI request parsing and response building.
#include "core/ordered_json_parse.h"
#include "server/openai_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <nlohmann/json.hpp>
#include <span>

#include <random>
#include "core/json_text.h"
#include "server/json_text.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

ApiError wrong_type(const std::string& field, const char* expected, const json& v) {
  return invalid_request(fmt::format("'{}' must be {}, got {}", field, expected, type_name(v)), field);
}

// Each getter: absent or null leaves *out alone; a wrong type is an error.
std::optional<ApiError> get_number(const json& body, const std::string& field, double* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(field, "a number", *it);
  *out = it->get<double>();
  return std::nullopt;
}

std::optional<ApiError> get_int(const json& body, const std::string& field, int64_t* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer() || it->is_number_unsigned()) {
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX))
      return invalid_request(fmt::format("'{}' is too large", field), field);
    *out = it->get<int64_t>();
    return std::nullopt;
  }
  if (it->is_number_float()) {
    const double d = it->get<double>();
    if (d == double(int64_t(d)) && std::abs(d) < 9e15) {
      *out = int64_t(d);
      return std::nullopt;
    }
  }
  return wrong_type(field, "an integer", *it);
}

std::optional<ApiError> get_bool(const json& body, const std::string& field, bool* out) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(field, "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> range_error(const std::string& field, const std::string& range, double got) {
  return invalid_request(fmt::format("'{}' must be {}, got {}", field, range, got), field);
}

std::optional<ApiError> parse_token_array(const json& arr, const std::string& field, std::vector<TokenId>* out) {
  out->clear();
  for (const json& t : arr) {
    if (!t.is_number_integer() && !t.is_number_unsigned())
      return invalid_request(fmt::format("'{}' token ids must be integers", field), field);
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > INT32_MAX) return invalid_request(fmt::format("'{}' has token id {}", field, id), field);
    out->push_back(TokenId(id));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompts(const json& body, std::vector<PromptInput>* prompts) {
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) return invalid_request("'prompt' is required", "prompt");
  const json& p = *it;
  if (p.is_string()) {
    prompts->push_back({p.get<std::string>(), {}});
  } else if (p.is_array()) {
    if (p.empty()) return invalid_request("'prompt' must not be an empty array", "prompt");
    if (p[0].is_number()) {  // one prompt as token ids
      PromptInput in;
      if (auto e = parse_token_array(p, "prompt", &in.tokens)) return e;
      prompts->push_back(std::move(in));
    } else {
      for (const json& item : p) {
        PromptInput in;
        if (item.is_string()) {
          in.text = item.get<std::string>();
        } else if (item.is_array() && !item.empty()) {
          if (auto e = parse_token_array(item, "prompt", &in.tokens)) return e;
        } else {
          return invalid_request("'prompt' must be a string, an array of strings, or token ids", "prompt");
        }
        prompts->push_back(std::move(in));
      }
    }
  } else {
    return wrong_type("prompt", "a string or an array", p);
  }
  if (int32_t(prompts->size()) > kMaxPrompts)
    return invalid_request(fmt::format("at most {} prompts per request", kMaxPrompts), "prompt");
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const json& body, std::vector<ChatMessage>* messages) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return invalid_request("'messages' is required", "messages");
  if (!it->is_array()) return wrong_type("messages", "an array", *it);
  if (it->empty()) return invalid_request("'messages' must not be empty", "messages");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string field = fmt::format("messages[{}]", i);
    if (!m.is_object()) return wrong_type(field, "an object", m);
    auto role = m.find("role");
    if (role == m.end() || !role->is_string())
      return invalid_request(fmt::format("'{}.role' must be a string", field), field + ".role");
    ChatMessage msg;
    msg.role = role->get<std::string>();
    if (msg.role == "function") msg.role = "tool";  // the legacy functions API's tool result
    if (!ChatTemplate::is_known_role(msg.role))
      return invalid_request(
          fmt::format("'{}.role' is '{}'; expected system, user, assistant, developer or tool", field, msg.role),
          field + ".role");
    auto content = m.find("content");
    if (content == m.end() || content->is_null()) {
      if (msg.role != "assistant")
        return invalid_request(fmt::format("'{}.content' is required", field), field + ".content");
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      // Content parts: the text parts, joined (this server has no image or audio input).
      for (const json& part : *content) {
        auto type = part.is_object() ? part.find("type") : part.end();
        auto text = part.is_object() ? part.find("text") : part.end();
        if (!part.is_object() || type == part.end() || !type->is_string() || *type != "text" || text == part.end() ||
            !text->is_string())
          return invalid_request(fmt::format("'{}.content' parts must be {{\"type\": \"text\", \"text\": ...}}", field),
                                 field + ".content");
        msg.content += text->get<std::string>();
      }
    } else {
      return wrong_type(field + ".content", "a string or an array of parts", *content);
    }
    // An earlier reply's reasoning, given back (vLLM's reasoning_content, or reasoning): the template decides.
    for (const char* key : {"reasoning_content", "reasoning"}) {
      auto it = m.find(key);
      if (msg.role != "assistant" || it == m.end() || it->is_null()) continue;
      if (!it->is_string()) return wrong_type(field + "." + key, "a string", *it);
      msg.reasoning_content = it->get<std::string>();
    }
    if (auto calls = m.find("tool_calls"); msg.role == "assistant" && calls != m.end() && !calls->is_null()) {
      if (!calls->is_array()) return wrong_type(field + ".tool_calls", "an array", *calls);
      for (size_t c = 0; c < calls->size(); ++c) {
        const json& call = (*calls)[c];
        const std::string call_field = fmt::format("{}.tool_calls[{}]", field, c);
        const json* function = call.is_object() && call.contains("function") ? &call["function"] : nullptr;
        if (function == nullptr || !function->is_object() || !function->contains("name") ||
            !(*function)["name"].is_string() ||
            (function->contains("arguments") && !(*function)["arguments"].is_string()))
          return invalid_request(fmt::format("'{}' must be {{\"id\", \"type\": \"function\", \"function\": {{\"name\", "
                                             "\"arguments\": a JSON string}}}}",
                                             call_field),
                                 call_field);
        ToolCall tc;
        tc.id = call.value("id", std::string());
        tc.name = (*function)["name"].get<std::string>();
        tc.arguments = function->value("arguments", std::string("{}"));
        msg.tool_calls.push_back(std::move(tc));
      }
    }
    if (auto call = m.find("function_call"); msg.role == "assistant" && call != m.end() && !call->is_null()) {
      // The legacy functions API's call: {name, arguments (JSON text)}.
      if (!call->is_object() || !call->contains("name") || !(*call)["name"].is_string() ||
          (call->contains("arguments") && !(*call)["arguments"].is_string()))
        return invalid_request(
            fmt::format("'{}.function_call' must be {{\"name\", \"arguments\": a JSON string}}", field),
            field + ".function_call");
      ToolCall tc;
      tc.name = (*call)["name"].get<std::string>();
      tc.arguments = call->value("arguments", std::string("{}"));
      msg.tool_calls.push_back(std::move(tc));
    }
    if (msg.role == "tool") {
      if (auto id = m.find("tool_call_id"); id != m.end() && !id->is_null()) {
        if (!id->is_string()) return wrong_type(field + ".tool_call_id", "a string", *id);
        msg.tool_call_id = id->get<std::string>();
      }
      if (auto name = m.find("name"); name != m.end() && !name->is_null()) {
        if (!name->is_string()) return wrong_type(field + ".name", "a string", *name);
        msg.name = name->get<std::string>();
      }
    }
    messages->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_stop(const json& body, std::vector<std::string>* stop) {
  auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    if (!it->get<std::string>().empty()) stop->push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const json& s : *it) {
      if (!s.is_string()) return invalid_request("'stop' must be a string or an array of strings", "stop");
      if (!s.get<std::string>().empty()) stop->push_back(s.get<std::string>());
    }
  } else {
    return wrong_type("stop", "a string or an array of strings", *it);
  }
  if (int32_t(stop->size()) > kMaxStops)
    return invalid_request(fmt::format("at most {} stop strings", kMaxStops), "stop");
  return std::nullopt;
}

// OpenAI's logit_bias: {"token id": bias}, the ids as strings (JSON keys).
std::optional<ApiError> parse_logit_bias(const json& body, std::vector<std::pair<TokenId, float>>* out) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return wrong_type("logit_bias", "an object of token ids to numbers", *it);
  for (const auto& [key, value] : it->items()) {
    int64_t id = -1;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id > INT32_MAX)
      return invalid_request(fmt::format("'logit_bias' keys must be token ids, got '{}'", key), "logit_bias");
    if (!value.is_number())
      return invalid_request(fmt::format("'logit_bias' values must be numbers, got {} for {}", type_name(value), key),
                             "logit_bias");
    const double bias = value.get<double>();
    if (!(bias >= -100.0 && bias <= 100.0))
      return invalid_request(fmt::format("'logit_bias' values must be in [-100, 100], got {} for {}", bias, key),
                             "logit_bias");
    out->push_back({TokenId(id), float(bias)});
  }
  return std::nullopt;
}

json logprobs_completion_json(const ChoiceResult& c) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const TokenLogprobInfo& t : c.logprobs) {
    tokens.push_back(t.token);
    if (!t.logprob) {  // an echoed prompt's first token: OpenAI's null entries
      token_logprobs.push_back(nullptr);
      top.push_back(nullptr);
    } else {
      token_logprobs.push_back(*t.logprob);
      json alts = json::object();
      for (const TopLogprob& a : t.top) alts[a.token] = a.logprob;
      top.push_back(std::move(alts));
    }
    offsets.push_back(t.text_offset);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json prompt_logprobs_json(const PromptLogprobs& positions) {
  json out = json::array();
  for (const std::vector<PromptLogprob>& at : positions) {
    if (at.empty()) {
      out.push_back(nullptr);
      continue;
    }
    json entries = json::object();
    for (const PromptLogprob& e : at)
      entries[std::to_string(e.token_id)] = {
          {"logprob", e.logprob}, {"rank", e.rank}, {"decoded_token", e.decoded_token}};
    out.push_back(std::move(entries));
  }
  return out;
}

json bytes_json(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back(int(c));
  return b;
}

json logprobs_chat_json(const ChoiceResult& c) {
  json content = json::array();
  for (const TokenLogprobInfo& t : c.logprobs) {
    json alts = json::array();
    for (const TopLogprob& a : t.top)
      alts.push_back({{"token", a.token}, {"logprob", a.logprob}, {"bytes", bytes_json(a.token)}});
    content.push_back({{"token", t.token},
                       {"logprob", t.logprob.value_or(0.0f)},  // chat scores sampled tokens only: always set
                       {"bytes", bytes_json(t.token)},
                       {"top_logprobs", alts}});
  }
  return {{"content", content}};
}

json finish_json(const std::optional<FinishReason>& r) {
  return r ? json(std::string(finish_reason_json(*r))) : json(nullptr);
}

json usage_object(const UsageFigures& u) {
  json j = {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
  if (u.reasoning_tokens > 0) j["completion_tokens_details"] = {{"reasoning_tokens", u.reasoning_tokens}};
  return j;
}

json header_object(const ResponseHeader& h, std::string_view object) {
  return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

// The fields each endpoint implements. Anything else in a request is a 400 naming it, except the fields that
// cannot change the output (kHarmlessFields): a field silently ignored would be a lie about what was generated.
constexpr std::string_view kCommonFields[] = {"model",
                                              "max_tokens",
                                              "temperature",
                                              "top_p",
                                              "n",
                                              "stream",
                                              "stream_options",
                                              "stop",
                                              "presence_penalty",
                                              "frequency_penalty",
                                              "seed",
                                              "top_k",
                                              "min_p",
                                              "repetition_penalty",
                                              "ignore_eos",
                                              "logprobs",
                                              "logit_bias",
                                              "min_tokens",
                                              "stop_token_ids",
                                              "guided_json",
                                              "guided_regex",
                                              "guided_choice",
                                              "guided_grammar",
                                              "structured_outputs",
                                              "grammar",
                                              "prompt_logprobs"};
constexpr std::string_view kCompletionFields[] = {"prompt", "echo", "best_of", "suffix"};
constexpr std::string_view kChatFields[] = {
    "messages",        "max_completion_tokens", "top_logprobs",         "add_generation_prompt",
    "response_format", "tool_choice",           "function_call",        "modalities",
    "tools",           "parallel_tool_calls",   "chat_template_kwargs", "functions",
    "reasoning_effort", "reasoning_format"};
// Accepted and ignored: they label or route a request and never change what is generated.
constexpr std::string_view kHarmlessFields[] = {"user", "metadata", "store", "service_tier"};
// Known to the OpenAI API (or vLLM's) but not implemented here: named as such in the error.
constexpr std::string_view kUnimplementedFields[] = {                                                     "audio",
                                                     "prediction",
                                                     "web_search_options",
                                                     "chat_template",
                                                     "skip_special_tokens",
                                                     "spaces_between_special_tokens",
                                                     "include_stop_str_in_output",
                                                     "length_penalty",
                                                     "use_beam_search",
                                                     "truncate_prompt_tokens",
                                                     "priority",
                                                     "documents",
                                                     "return_tokens_as_token_ids",
                                                     "continue_final_message",
                                                     "echo"};

bool contains(std::span<const std::string_view> list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The first field of `body` the endpoint does not implement, as an error naming it (and the field it most likely
// meant, when one is a letter or two away).
std::optional<ApiError> unknown_field(const json& body, bool chat) {
  const std::span<const std::string_view> own =
      chat ? std::span<const std::string_view>(kChatFields) : std::span<const std::string_view>(kCompletionFields);
  for (const auto& [key, value] : body.items()) {
    if (contains(kCommonFields, key) || contains(own, key) || contains(kHarmlessFields, key)) continue;
    if (contains(kUnimplementedFields, key) || (!chat && contains(kChatFields, key)) ||
        (chat && contains(kCompletionFields, key)))
      return invalid_request(fmt::format("'{}' is not supported by this server's {} endpoint", key,
                                         chat ? "/v1/chat/completions" : "/v1/completions"),
                             key);
    std::string hint;
    size_t best = 3;
    for (auto list : {std::span<const std::string_view>(kCommonFields), own}) {
      for (std::string_view known : list) {
        const size_t d = edit_distance(key, known);
        if (d < best) {
          best = d;
          hint = fmt::format(" (did you mean '{}'?)", known);
        }
      }
    }
    return invalid_request(fmt::format("Unrecognized request argument supplied: {}{}", key, hint), key);
  }
  return std::nullopt;
}

// Fields accepted only with the value that changes nothing (what OpenAI does without them); any other value asks
// for something not implemented here.
std::optional<ApiError> check_no_op_fields(const json& body, const CompletionParams& p) {
  auto present = [&](const char* field) -> const json* {
    auto it = body.find(field);
    return it == body.end() || it->is_null() ? nullptr : &*it;
  };
  if (const json* v = present("best_of")) {
    if (!v->is_number_integer() || v->get<int64_t>() != p.n)
      return invalid_request("'best_of' other than n is not supported by this server", "best_of");
  }
  if (const json* v = present("modalities")) {
    if (*v != json::array({"text"}))
      return invalid_request("'modalities' other than [\"text\"] is not supported by this server", "modalities");
  }
  if (const json* v = present("stream_options")) {
    for (const auto& [key, value] : v->items())
      if (key != "include_usage" && key != "continuous_usage_stats")
        return invalid_request(fmt::format("'stream_options.{}' is not supported by this server", key),
                               "stream_options." + key);
  }
  if (const json* msgs = present("messages"); msgs != nullptr && msgs->is_array()) {
    for (size_t i = 0; i < msgs->size(); ++i) {
      const json& m = (*msgs)[i];
      if (!m.is_object()) continue;
      const json role = m.value("role", json());
      for (const auto& [key, value] : m.items())
        if (key != "role" && key != "content" && !value.is_null() &&
            !((key == "tool_calls" || key == "function_call" || key == "reasoning_content" || key == "reasoning") &&
              role == "assistant") &&
            !((key == "tool_call_id" || key == "name") && role == "tool") && !(key == "name" && role == "function"))
          return invalid_request(fmt::format("'messages[{}].{}' is not supported by this server", i, key),
                                 fmt::format("messages[{}].{}", i, key));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_json_object(std::string_view text, json* out) {
  if (json_nesting_exceeds(text, kMaxJsonDepth))
    return invalid_request(fmt::format("the request body is nested deeper than {} levels", kMaxJsonDepth));
  *out = json::parse(text, nullptr, false);
  if (out->is_discarded()) return invalid_request("the request body is not valid JSON");
  if (!out->is_object()) return invalid_request("the request body must be a JSON object");
  return std::nullopt;
}

std::optional<ApiError> parse_completion_params(std::string_view body_text, bool chat, CompletionParams* out) {
  json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  if (auto e = unknown_field(body, chat)) return e;
  CompletionParams p;
  p.chat = chat;
  p.sampling.temperature = 1.0f;  // OpenAI's defaults
  p.sampling.top_p = 1.0f;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return wrong_type("model", "a string", *it);
    p.model = it->get<std::string>();
  }
  if (chat) {
    if (auto e = parse_messages(body, &p.messages)) return e;
    if (auto e = get_bool(body, "add_generation_prompt", &p.add_generation_prompt)) return e;
  } else {
    if (auto e = parse_prompts(body, &p.prompts)) return e;
    if (auto e = get_bool(body, "echo", &p.echo)) return e;
    if (auto it = body.find("suffix"); it != body.end() && !it->is_null()) {
      if (!it->is_string()) return wrong_type("suffix", "a string", *it);
      p.suffix = it->get<std::string>();
      if (p.echo) return invalid_request("'suffix' and 'echo' together are not supported by this server", "suffix");
    }
  }

  int64_t max_tokens = -1;
  if (auto e = get_int(body, "max_tokens", &max_tokens)) return e;
  if (chat) {
    int64_t max_completion = -1;
    if (auto e = get_int(body, "max_completion_tokens", &max_completion)) return e;
    if (body.contains("max_completion_tokens") && !body["max_completion_tokens"].is_null()) {
      max_tokens = max_completion;
      if (max_tokens < 1) return range_error("max_completion_tokens", "at least 1", double(max_tokens));
    }
  }
  // max_tokens 0 with echo: the prompt (and its logprobs) alone, as lm-evaluation-harness scores a text.
  const bool echo_only = !chat && p.echo && max_tokens == 0 && body.contains("max_tokens");
  if (body.contains("max_tokens") && !body["max_tokens"].is_null() && max_tokens < 1 && !echo_only)
    return range_error("max_tokens", chat || max_tokens < 0 ? "at least 1" : "at least 1 (0 only with 'echo': true)",
                       double(max_tokens));
  if (echo_only) {
    p.echo_only = true;
    p.max_tokens_given = true;
    p.sampling.max_tokens = 0;
  }
  if (max_tokens >= 1) {
    p.max_tokens_given = true;
    p.sampling.max_tokens = int32_t(std::min<int64_t>(max_tokens, INT32_MAX));
  }

  double temperature = p.sampling.temperature, top_p = p.sampling.top_p, min_p = 0.0, presence = 0.0, frequency = 0.0,
         repetition = 1.0;
  if (auto e = get_number(body, "temperature", &temperature)) return e;
  if (!(temperature >= 0.0 && temperature <= 2.0)) return range_error("temperature", "in [0, 2]", temperature);
  if (auto e = get_number(body, "top_p", &top_p)) return e;
  if (!(top_p > 0.0 && top_p <= 1.0)) return range_error("top_p", "in (0, 1]", top_p);
  if (auto e = get_number(body, "min_p", &min_p)) return e;
  if (!(min_p >= 0.0 && min_p <= 1.0)) return range_error("min_p", "in [0, 1]", min_p);
  if (auto e = get_number(body, "presence_penalty", &presence)) return e;
  if (!(presence >= -2.0 && presence <= 2.0)) return range_error("presence_penalty", "in [-2, 2]", presence);
  if (auto e = get_number(body, "frequency_penalty", &frequency)) return e;
  if (!(frequency >= -2.0 && frequency <= 2.0)) return range_error("frequency_penalty", "in [-2, 2]", frequency);
  if (auto e = get_number(body, "repetition_penalty", &repetition)) return e;
  if (!(repetition > 0.0 && repetition <= 10.0)) return range_error("repetition_penalty", "in (0, 10]", repetition);
  int64_t top_k = 0;
  if (auto e = get_int(body, "top_k", &top_k)) return e;
  if (top_k == -1) top_k = 0;  // vLLM's "off"
  if (top_k < 0 || top_k > INT32_MAX) return range_error("top_k", "-1, 0 (off) or positive", double(top_k));
  p.sampling.temperature = float(temperature);
  p.sampling.top_p = float(top_p);
  p.sampling.min_p = float(min_p);
  p.sampling.presence_penalty = float(presence);
  p.sampling.frequency_penalty = float(frequency);
  p.sampling.repetition_penalty = float(repetition);
  p.sampling.top_k = int32_t(top_k);

  if (auto it = body.find("seed"); it != body.end() && !it->is_null()) {
    if (it->is_number_unsigned()) {
      p.sampling.seed = it->get<uint64_t>();
    } else if (it->is_number_integer()) {
      p.sampling.seed = uint64_t(it->get<int64_t>());  // negative seeds wrap: still deterministic
    } else {
      return wrong_type("seed", "an integer", *it);
    }
  }
  if (auto e = parse_stop(body, &p.sampling.stop)) return e;
  if (auto e = get_bool(body, "ignore_eos", &p.sampling.ignore_eos)) return e;

  int64_t n = 1;
  if (auto e = get_int(body, "n", &n)) return e;
  if (n < 1 || n > kMaxChoices) return range_error("n", fmt::format("in [1, {}]", kMaxChoices), double(n));
  p.n = int32_t(n);

  if (auto e = get_bool(body, "stream", &p.stream)) return e;
  if (auto it = body.find("stream_options"); it != body.end() && !it->is_null()) {
    if (!it->is_object()) return wrong_type("stream_options", "an object", *it);
    if (!p.stream) return invalid_request("'stream_options' is only allowed with 'stream': true", "stream_options");
    if (auto e = get_bool(*it, "include_usage", &p.include_usage)) return e;
    if (auto e = get_bool(*it, "continuous_usage_stats", &p.continuous_usage)) return e;
  }

  if (chat) {
    bool logprobs = false;
    if (auto e = get_bool(body, "logprobs", &logprobs)) return e;
    int64_t top = 0;
    if (auto e = get_int(body, "top_logprobs", &top)) return e;
    if (top < 0 || top > kMaxLogprobs)
      return range_error("top_logprobs", fmt::format("in [0, {}]", kMaxLogprobs), double(top));
    if (top > 0 && !logprobs) return invalid_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
    if (logprobs) p.logprobs = int32_t(top);
  } else {
    int64_t logprobs = -1;
    if (auto e = get_int(body, "logprobs", &logprobs)) return e;
    if (body.contains("logprobs") && !body["logprobs"].is_null()) {
      if (logprobs < 0 || logprobs > kMaxLogprobs)
        return range_error("logprobs", fmt::format("in [0, {}]", kMaxLogprobs), double(logprobs));
      p.logprobs = int32_t(logprobs);
    }
  }
  if (auto it = body.find("prompt_logprobs"); it != body.end() && !it->is_null()) {
    int64_t prompt_logprobs = -1;
    if (auto e = get_int(body, "prompt_logprobs", &prompt_logprobs)) return e;
    if (prompt_logprobs < 0 || prompt_logprobs > kMaxLogprobs)
      return range_error("prompt_logprobs", fmt::format("in [0, {}]", kMaxLogprobs), double(prompt_logprobs));
    // As vLLM: the field belongs to whole responses (a stream's echo with logprobs carries the prompt's instead).
    if (p.stream) return invalid_request("'prompt_logprobs' is not available with 'stream': true", "prompt_logprobs");
    p.prompt_logprobs = int32_t(prompt_logprobs);
  }
  if (auto e = parse_logit_bias(body, &p.sampling.logit_bias)) return e;
  int64_t min_tokens = 0;
  if (auto e = get_int(body, "min_tokens", &min_tokens)) return e;
  if (min_tokens < 0 || min_tokens > INT32_MAX) return range_error("min_tokens", "at least 0", double(min_tokens));
  // Against max_tokens once its default is known: request_limits.h.
  p.sampling.min_tokens = int32_t(min_tokens);
  if (auto it = body.find("stop_token_ids"); it != body.end() && !it->is_null()) {
    if (!it->is_array()) return wrong_type("stop_token_ids", "an array of token ids", *it);
    if (auto e = parse_token_array(*it, "stop_token_ids", &p.sampling.stop_token_ids)) return e;
  }
  // Schemas keep the order of their properties as written: these fields are read from an order-keeping parse.
  nlohmann::ordered_json ordered;
  for (const char* field :
       {"response_format", "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
        "grammar", "tools", "tool_choice", "parallel_tool_calls", "chat_template_kwargs", "functions", "function_call"})
    if (ordered.is_null() && body.contains(field)) ordered = parse_ordered_json(body_text).value_or(nullptr);
  if (!ordered.is_object()) ordered = nlohmann::ordered_json::object();
  if (auto e = parse_output_constraint(ordered, chat, &p.constraint)) return e;
  if (chat) {
    if (auto e = parse_tool_params(ordered, &p.tools)) return e;
    if (p.constraint && (p.tools.choice == ToolChoice::kRequired || p.tools.choice == ToolChoice::kNamed))
      return invalid_request(
          fmt::format("'tool_choice' '{}' forces a tool call, and '{}' another output constraint: "
                      "give one of them",
                      p.tools.choice == ToolChoice::kRequired ? "required" : p.tools.named, p.constraint->param),
          "tool_choice");
  }
  if (chat) {
    if (auto it = ordered.find("chat_template_kwargs"); it != ordered.end() && !it->is_null()) {
      if (!it->is_object()) return wrong_type("chat_template_kwargs", "an object", body["chat_template_kwargs"]);
      for (const auto& [key, value] : it->items()) {
        // The values the server itself puts in the template's context are not the client's to replace.
        if (key == "messages" || key == "tools" || key == "add_generation_prompt" || key == "bos_token" ||
            key == "eos_token")
          return invalid_request(
              fmt::format("'chat_template_kwargs.{}' is set by the server (use the request's own field)", key),
              "chat_template_kwargs." + key);
        p.chat_template_kwargs[key] = value;
      }
    }
  }
  if (chat) {
    if (auto it = body.find("reasoning_effort"); it != body.end() && !it->is_null()) {
      if (!it->is_string() || (*it != "minimal" && *it != "low" && *it != "medium" && *it != "high"))
        return invalid_request("'reasoning_effort' must be \"minimal\", \"low\", \"medium\" or \"high\"",
                               "reasoning_effort");
      p.reasoning_effort = it->get<std::string>();
    }
    if (auto it = body.find("reasoning_format"); it != body.end() && !it->is_null()) {
      std::optional<ReasoningFormat> f = it->is_string() ? parse_reasoning_format(it->get<std::string>()) : std::nullopt;
      if (!f) return invalid_request("'reasoning_format' must be \"auto\", \"none\" or \"deepseek\"", "reasoning_format");
      p.reasoning_format = f;
    }
  }
  if (auto e = check_no_op_fields(body, p)) return e;
  *out = std::move(p);
  return std::nullopt;
}

std::string_view response_id_prefix(bool chat) { return chat ? "chatcmpl-" : "cmpl-"; }

std::string_view finish_reason_json(FinishReason reason) { return finish_reason_name(reason); }

std::string usage_json(const UsageFigures& usage) { return json_text(usage_object(usage)); }

std::string completion_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices,
                                const UsageFigures& usage, bool with_logprobs) {
  json j = header_object(h, "text_completion");
  json arr = json::array();
  for (const ChoiceResult& c : choices) {
    json choice = {{"index", c.index},
                   {"text", c.text},
                   {"logprobs", with_logprobs ? logprobs_completion_json(c) : json(nullptr)},
                   {"finish_reason", finish_json(c.finish_reason)}};
    if (c.prompt_logprobs) choice["prompt_logprobs"] = prompt_logprobs_json(*c.prompt_logprobs);
    arr.push_back(std::move(choice));
  }
  j["choices"] = std::move(arr);
  j["usage"] = usage_object(usage);
  return json_text(j);
}

std::string chat_response(const ResponseHeader& h, const std::vector<ChoiceResult>& choices, const UsageFigures& usage,
                          bool with_logprobs, bool legacy_functions) {
  json j = header_object(h, "chat.completion");
  json arr = json::array();
  for (const ChoiceResult& c : choices) {
    json message = {{"role", "assistant"},
                    {"content", c.text.empty() && !c.tool_calls.empty() ? json(nullptr) : json(c.text)}};
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;  // vLLM's and llama-server's name
    if (!c.tool_calls.empty() && legacy_functions) {
      message["function_call"] = {{"name", c.tool_calls[0].name}, {"arguments", c.tool_calls[0].arguments}};
    } else if (!c.tool_calls.empty()) {
      json calls = json::array();
      for (const ToolCall& t : c.tool_calls)
        calls.push_back(
            {{"id", t.id}, {"type", "function"}, {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
      message["tool_calls"] = std::move(calls);
    }
    const char* called = legacy_functions ? "function_call" : "tool_calls";
    arr.push_back({{"index", c.index},
                   {"message", std::move(message)},
                   {"logprobs", with_logprobs ? logprobs_chat_json(c) : json(nullptr)},
                   {"finish_reason", c.called_tools ? json(called) : finish_json(c.finish_reason)}});
  }
  j["choices"] = std::move(arr);
  j["usage"] = usage_object(usage);
  // vLLM's chat shape: once for the response (the choices share their prompt).
  if (!choices.empty() && choices[0].prompt_logprobs)
    j["prompt_logprobs"] = prompt_logprobs_json(*choices[0].prompt_logprobs);
  return json_text(j);
}

std::string completion_chunk(const ResponseHeader& h, const ChoiceResult& c, bool with_logprobs,
                             const std::optional<UsageFigures>& usage) {
  json j = header_object(h, "text_completion");
  j["choices"] = json::array({{{"index", c.index},
                               {"text", c.text},
                               {"logprobs", with_logprobs ? logprobs_completion_json(c) : json(nullptr)},
                               {"finish_reason", finish_json(c.finish_reason)}}});
  if (usage) j["usage"] = usage_object(*usage);
  return json_text(j);
}

std::string chat_chunk(const ResponseHeader& h, const ChoiceResult& c, bool first, bool with_logprobs,
                       const std::optional<UsageFigures>& usage, bool legacy_functions) {
  json j = header_object(h, "chat.completion.chunk");
  json delta = json::object();
  if (first) delta["role"] = "assistant";
  if (!c.text.empty() || (first && !c.finish_reason && c.tool_call_deltas.empty())) delta["content"] = c.text;
  if (first && c.text.empty() && !c.tool_call_deltas.empty()) delta["content"] = nullptr;
  if (!c.reasoning.empty()) delta["reasoning_content"] = c.reasoning;
  if (!c.tool_call_deltas.empty() && legacy_functions) {
    // One call: its name with the first piece, then the arguments piece by piece.
    const ToolCallDelta& d = c.tool_call_deltas.front();
    delta["function_call"] =
        d.id.empty() ? json{{"arguments", d.arguments}} : json{{"name", d.name}, {"arguments", d.arguments}};
  } else if (!c.tool_call_deltas.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& d : c.tool_call_deltas) {
      json call = {{"index", d.index}};
      if (!d.id.empty()) {
        call["id"] = d.id;
        call["type"] = "function";
        call["function"] = {{"name", d.name}, {"arguments", d.arguments}};
      } else {
        call["function"] = {{"arguments", d.arguments}};
      }
      calls.push_back(std::move(call));
    }
    delta["tool_calls"] = std::move(calls);
  }
  j["choices"] = json::array(
      {{{"index", c.index},
        {"delta", delta},
        {"logprobs", with_logprobs ? logprobs_chat_json(c) : json(nullptr)},
        {"finish_reason", c.called_tools && c.finish_reason ? json(legacy_functions ? "function_call" : "tool_calls")
                                                            : finish_json(c.finish_reason)}}});
  if (usage) j["usage"] = usage_object(*usage);
  return json_text(j);
}

std::string usage_chunk(const ResponseHeader& h, bool chat, const UsageFigures& usage) {
  json j = header_object(h, chat ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_object(usage);
  return json_text(j);
}

int32_t TextOffsetCounter::next(std::string_view token_bytes) {
  auto is_lead = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; };
  // Inside a character: the offset of the character begun before it.
  const int32_t offset =
      !token_bytes.empty() && !is_lead(token_bytes[0]) && num_chars_ > 0 ? num_chars_ - 1 : num_chars_;
  for (char c : token_bytes) num_chars_ += is_lead(c) ? 1 : 0;
  return offset;
}

std::string sse_event(std::string_view payload) { return fmt::format("data: {}\n\n", payload); }

}  // namespace pagoda::server
