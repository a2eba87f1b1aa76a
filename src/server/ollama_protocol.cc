// Ollama request translation (to the OpenAI parameters the chat and completion paths validate) and its answers.
#include "server/ollama_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/ordered_json_parse.h"
#include "server/json_text.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

// options mapped to a sampling or context setting: Ollama's name -> the OpenAI field it becomes ("" = handled
// apart).
constexpr std::pair<std::string_view, std::string_view> kOllamaMappedOptions[] = {
    {"temperature", "temperature"},
    {"top_p", "top_p"},
    {"top_k", "top_k"},
    {"min_p", "min_p"},
    {"seed", "seed"},
    {"num_predict", "max_tokens"},
    {"stop", "stop"},
    {"repeat_penalty", "repetition_penalty"},
    {"presence_penalty", "presence_penalty"},
    {"frequency_penalty", "frequency_penalty"},
    {"num_ctx", ""},
};
// Hardware and runtime hints: this server's own flags decide them; accepted, logged as without effect.
constexpr std::string_view kOllamaIgnoredOptions[] = {"num_gpu",  "main_gpu",  "num_thread", "num_batch", "use_mmap",
                                                "use_mlock", "numa",     "low_vram",   "f16_kv",    "vocab_only",
                                                "num_keep", "logits_all", "embedding_only"};
// Sampling options of Ollama's this server does not implement: refused by name.
constexpr std::string_view kOllamaRefusedOptions[] = {"typical_p", "repeat_last_n", "penalize_newline", "mirostat",
                                                "mirostat_tau", "mirostat_eta", "tfs_z", "draft_num_predict"};

template <size_t N>
bool ollama_listed(const std::string_view (&list)[N], std::string_view key) {
  for (std::string_view k : list)
    if (k == key) return true;
  return false;
}

// The OpenAI field an error names, back in Ollama's spelling.
void ollama_rename_param(ApiError* e) {
  for (const auto& [ollama, openai] : kOllamaMappedOptions) {
    if (openai.empty()) continue;
    const std::string quoted = fmt::format("'{}'", openai);
    if (size_t at = e->message.find(quoted); at != std::string::npos)
      e->message.replace(at, quoted.size(), fmt::format("'options.{}'", ollama));
    if (e->param && *e->param == openai) *e->param = "options." + std::string(ollama);
  }
  if (e->param && (e->param->starts_with("response_format") || e->param->starts_with("guided_json") ||
                   e->param->starts_with("structured_outputs"))) {
    e->message = "'format': " + e->message;
    e->param = "format";
  }
}

std::optional<ApiError> ollama_parse_options(const ojson& body, OllamaRequest* req, ojson* openai) {
  auto it = body.find("options");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return invalid_request("'options' must be an object", "options");
  for (const auto& [key, value] : it->items()) {
    const std::string at = "options." + key;
    if (ollama_listed(kOllamaIgnoredOptions, key)) {
      req->ignored_options.push_back(key);
      continue;
    }
    if (ollama_listed(kOllamaRefusedOptions, key))
      return invalid_request(fmt::format("'{}' is not supported by this server", at), at);
    std::string_view field;
    bool known = false;
    for (const auto& [ollama, openai] : kOllamaMappedOptions)
      if (ollama == key) {
        field = openai;
        known = true;
      }
    if (!known) return invalid_request(fmt::format("'{}' is not an option this server knows", at), at);
    if (value.is_null()) continue;
    if (key == "num_ctx") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1)
        return invalid_request("'options.num_ctx' must be a positive integer", at);
      req->num_ctx = value.get<int64_t>();
    } else if (key == "num_predict") {
      // -1: until the end (the context's); -2: fill the context. Both are the server's default here.
      if (!value.is_number_integer()) return invalid_request("'options.num_predict' must be an integer", at);
      const int64_t n = value.get<int64_t>();
      if (n == -1 || n == -2) continue;
      if (n < 1) return invalid_request("'options.num_predict' must be -1, -2 or at least 1", at);
      (*openai)["max_tokens"] = n;
    } else {
      (*openai)[std::string(field)] = value;
    }
  }
  return std::nullopt;
}

std::optional<ApiError> ollama_parse_format(const ojson& body, ojson* openai) {
  auto it = body.find("format");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) {
    const std::string f = it->get<std::string>();
    if (f.empty()) return std::nullopt;
    if (f != "json")
      return invalid_request(fmt::format("'format' must be \"json\" or a JSON schema, got \"{}\"", f), "format");
    (*openai)["response_format"] = {{"type", "json_object"}};
    return std::nullopt;
  }
  if (!it->is_object()) return invalid_request("'format' must be \"json\" or a JSON schema object", "format");
  (*openai)["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "format"}, {"schema", *it}}}};
  return std::nullopt;
}

// think: true/false, or a level. Whether the model can think is the server's to say (it knows the template).
std::optional<ApiError> ollama_parse_think(const ojson& body, OllamaRequest* req) {
  auto it = body.find("think");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_boolean()) {
    req->think = it->get<bool>();
    return std::nullopt;
  }
  if (it->is_string()) {
    const std::string level = it->get<std::string>();
    if (level == "low" || level == "medium" || level == "high") {
      req->think = true;
      req->think_level = level;
      return std::nullopt;
    }
  }
  return invalid_request("'think' must be a boolean or \"low\", \"medium\", \"high\"", "think");
}

// The request's keep_alive; the server's ModelSet acts on it where it serves several models (docs/SERVER_API.md).
std::optional<ApiError> ollama_parse_keep_alive(const ojson& body, std::optional<std::chrono::milliseconds>* out) {
  auto it = body.find("keep_alive");
  if (it == body.end() || it->is_null()) return std::nullopt;
  *out = parse_ollama_keep_alive(*it);
  if (*out) return std::nullopt;
  return invalid_request("'keep_alive' must be a duration (\"5m\", \"1h30m\", \"0\") or a number of seconds",
                         "keep_alive");
}

std::optional<ApiError> ollama_parse_stream(const ojson& body, ojson* openai) {
  auto it = body.find("stream");
  bool stream = true;  // Ollama streams unless told not to
  if (it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'stream' must be a boolean", "stream");
    stream = it->get<bool>();
  }
  (*openai)["stream"] = stream;
  return std::nullopt;
}

std::optional<ApiError> ollama_parse_model(const ojson& body, std::string* model) {
  auto it = body.find("model");
  if (it == body.end() || !it->is_string() || it->get<std::string>().empty())
    return invalid_request("model is required", "model");
  *model = it->get<std::string>();
  return std::nullopt;
}

// The AI SDK's Ollama provider (ollama-ai-provider-v2) sends temperature, top_p and max_output_tokens beside
// options, where Ollama drops them unread; here they apply, unless options sets the same.
std::optional<ApiError> ollama_top_level_sampling(const ojson& body, ojson* openai) {
  for (const auto& [key, field] : {std::pair<const char*, const char*>{"temperature", "temperature"},
                                   {"top_p", "top_p"},
                                   {"max_output_tokens", "max_tokens"}}) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null() || openai->contains(field)) continue;
    if (!it->is_number()) return invalid_request(fmt::format("'{}' must be a number", key), key);
    (*openai)[field] = *it;
  }
  return std::nullopt;
}

// Ollama's defaults where the request leaves a setting out.
void ollama_default_sampling(ojson* openai) {
  if (!openai->contains("temperature")) (*openai)["temperature"] = kOllamaTemperature;
  if (!openai->contains("top_k")) (*openai)["top_k"] = kOllamaTopK;
  if (!openai->contains("top_p")) (*openai)["top_p"] = kOllamaTopP;
}

std::optional<ApiError> ollama_finish(const ojson& openai, bool chat, OllamaRequest* out) {
  CompletionParams p;
  if (std::optional<ApiError> e = parse_completion_params(openai.dump(), chat, &p)) {
    ollama_rename_param(&*e);
    return e;
  }
  p.model.reset();  // matched apart (ollama_model_matches): the name may carry a tag
  out->params = std::move(p);
  return std::nullopt;
}

// A message's tool calls in OpenAI's shape (arguments as text).
std::optional<ApiError> ollama_tool_calls(const ojson& calls, const std::string& at, ojson* out) {
  if (!calls.is_array()) return invalid_request(fmt::format("'{}' must be an array", at), at);
  *out = ojson::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const ojson& c = calls[k];
    const std::string ck = fmt::format("{}[{}]", at, k);
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object())
      return invalid_request(fmt::format("'{}' must be an object with a function", ck), ck);
    const ojson& f = c["function"];
    if (!f.contains("name") || !f["name"].is_string())
      return invalid_request(fmt::format("'{}.function.name' must be a string", ck), ck + ".function.name");
    std::string arguments = "{}";
    if (auto a = f.find("arguments"); a != f.end() && !a->is_null()) arguments = a->is_string() ? a->get<std::string>() : a->dump();
    std::string id = c.contains("id") && c["id"].is_string() ? c["id"].get<std::string>() : fmt::format("call_{}", k);
    out->push_back({{"id", id}, {"type", "function"}, {"function", {{"name", f["name"]}, {"arguments", arguments}}}});
  }
  return std::nullopt;
}

std::optional<ApiError> ollama_chat_messages(const ojson& messages, ojson* out) {
  if (!messages.is_array()) return invalid_request("'messages' must be an array", "messages");
  *out = ojson::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    const std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) return invalid_request(fmt::format("'{}' must be an object", at), at);
    ojson msg = ojson::object();
    for (const auto& [key, value] : m.items()) {
      const std::string field = at + "." + key;
      if (key == "role") {
        if (!value.is_string()) return invalid_request(fmt::format("'{}' must be a string", field), field);
        std::string role = value.get<std::string>();
        for (char& ch : role) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        msg["role"] = role;
      } else if (key == "content") {
        if (!value.is_string() && !value.is_null())
          return invalid_request(fmt::format("'{}' must be a string", field), field);
        msg["content"] = value.is_null() ? std::string() : value.get<std::string>();
      } else if (key == "images") {
        if (!value.is_null() && !(value.is_array() && value.empty()))
          return invalid_request(fmt::format("'{}': this server's model reads no images", field), field);
      } else if (key == "thinking") {
        if (!value.is_null() && !(value.is_string() && value.get<std::string>().empty()))
          return invalid_request(
              fmt::format("'{}': this server does not give a model its earlier thinking; leave it out", field), field);
      } else if (key == "tool_calls") {
        if (value.is_null()) continue;
        ojson calls;
        if (auto e = ollama_tool_calls(value, field, &calls)) return e;
        msg["tool_calls"] = std::move(calls);
      } else if (key == "tool_name") {
        if (!value.is_string()) return invalid_request(fmt::format("'{}' must be a string", field), field);
        msg["name"] = value;
      } else if (key == "tool_call_id") {
        if (!value.is_string()) return invalid_request(fmt::format("'{}' must be a string", field), field);
        msg["tool_call_id"] = value;
      } else {
        return invalid_request(fmt::format("'{}' is not supported by this server", field), field);
      }
    }
    if (!msg.contains("role")) return invalid_request(fmt::format("'{}.role' is required", at), at + ".role");
    if (!msg.contains("content")) msg["content"] = "";
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

// The body as an order-keeping JSON object (a schema's property order is the output's), its depth bounded.
std::optional<ApiError> ollama_parse_body(std::string_view body_text, ojson* body) {
  if (json_nesting_exceeds(body_text, kMaxJsonDepth))
    return invalid_request(fmt::format("the request body is nested deeper than {} levels", kMaxJsonDepth));
  Result<ojson> parsed = parse_ordered_json(body_text);
  if (!parsed.ok() || !parsed->is_object()) return invalid_request("the request body must be a JSON object");
  *body = std::move(*parsed);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_ollama_chat(std::string_view body_text, OllamaRequest* out) {
  ojson body;
  if (auto e = ollama_parse_body(body_text, &body)) return e;
  OllamaRequest req;
  ojson openai = ojson::object();
  for (const auto& [key, value] : body.items()) {
    if (key == "model" || key == "messages" || key == "tools" || key == "format" || key == "options" ||
        key == "stream" || key == "keep_alive" || key == "think" || key == "tool_choice" || key == "temperature" ||
        key == "top_p" || key == "max_output_tokens")
      continue;
    return invalid_request(fmt::format("'{}' is not supported by this server's /api/chat", key), key);
  }
  if (auto e = ollama_parse_model(body, &req.model)) return e;
  if (auto e = ollama_parse_think(body, &req)) return e;
  if (auto e = ollama_parse_keep_alive(body, &req.keep_alive)) return e;
  if (auto e = ollama_parse_stream(body, &openai)) return e;
  auto messages = body.find("messages");
  if (messages == body.end() || messages->is_null() || (messages->is_array() && messages->empty())) {
    req.load_only = true;
    *out = std::move(req);
    return std::nullopt;
  }
  ojson converted;
  if (auto e = ollama_chat_messages(*messages, &converted)) return e;
  openai["messages"] = std::move(converted);
  if (auto it = body.find("tools"); it != body.end() && !it->is_null() && !(it->is_array() && it->empty()))
    openai["tools"] = *it;
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) openai["tool_choice"] = *it;
  if (auto e = ollama_parse_format(body, &openai)) return e;
  if (auto e = ollama_parse_options(body, &req, &openai)) return e;
  if (auto e = ollama_top_level_sampling(body, &openai)) return e;
  ollama_default_sampling(&openai);
  if (auto e = ollama_finish(openai, true, &req)) return e;
  *out = std::move(req);
  return std::nullopt;
}

std::optional<ApiError> parse_ollama_generate(std::string_view body_text, OllamaRequest* out) {
  ojson body;
  if (auto e = ollama_parse_body(body_text, &body)) return e;
  OllamaRequest req;
  ojson openai = ojson::object();
  for (const auto& [key, value] : body.items()) {
    if (key == "model" || key == "prompt" || key == "system" || key == "raw" || key == "format" ||
        key == "options" || key == "stream" || key == "keep_alive" || key == "think" || key == "temperature" ||
        key == "top_p" || key == "max_output_tokens")
      continue;
    if (value.is_null() || (key == "images" && value.is_array() && value.empty()) ||
        (key == "suffix" && value.is_string() && value.get<std::string>().empty()))
      continue;
    if (key == "images") return invalid_request("'images': this server's model reads no images", key);
    if (key == "suffix")
      return invalid_request("'suffix' (fill-in-the-middle) is not supported by this server's /api/generate", key);
    if (key == "template")
      return invalid_request("'template' is not supported: this server renders prompts with the model's own chat "
                             "template; send raw: true with a whole prompt instead",
                             key);
    if (key == "context")
      return invalid_request("'context' (deprecated in Ollama) is not supported: send the conversation to /api/chat",
                             key);
    return invalid_request(fmt::format("'{}' is not supported by this server's /api/generate", key), key);
  }
  if (auto e = ollama_parse_model(body, &req.model)) return e;
  if (auto e = ollama_parse_think(body, &req)) return e;
  if (auto e = ollama_parse_keep_alive(body, &req.keep_alive)) return e;
  if (auto e = ollama_parse_stream(body, &openai)) return e;
  bool raw = false;
  if (auto it = body.find("raw"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'raw' must be a boolean", "raw");
    raw = it->get<bool>();
  }
  std::string prompt, system;
  if (auto it = body.find("prompt"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_request("'prompt' must be a string", "prompt");
    prompt = it->get<std::string>();
  }
  if (auto it = body.find("system"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_request("'system' must be a string", "system");
    system = it->get<std::string>();
  }
  if (prompt.empty()) {
    req.load_only = true;
    *out = std::move(req);
    return std::nullopt;
  }
  if (raw) {
    if (!system.empty())
      return invalid_request("'system' has no place in a raw prompt: write it into the prompt", "system");
    openai["prompt"] = prompt;
  } else {
    ojson messages = ojson::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    openai["messages"] = std::move(messages);
  }
  if (auto e = ollama_parse_format(body, &openai)) return e;
  if (auto e = ollama_parse_options(body, &req, &openai)) return e;
  if (auto e = ollama_top_level_sampling(body, &openai)) return e;
  ollama_default_sampling(&openai);
  if (raw && openai.contains("response_format")) {
    // Completions take the same constraint under vLLM's name.
    ojson rf = std::move(openai["response_format"]);
    openai.erase("response_format");
    if (rf["type"] == "json_object")
      openai["structured_outputs"] = {{"json_object", true}};
    else
      openai["guided_json"] = rf["json_schema"]["schema"];
  }
  if (auto e = ollama_finish(openai, !raw, &req)) return e;
  *out = std::move(req);
  return std::nullopt;
}

std::optional<ApiError> parse_ollama_embed(std::string_view body_text, bool legacy, EmbeddingParams* out,
                                           std::string* model_out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  nlohmann::json openai = nlohmann::json::object();
  for (const auto& [key, value] : body.items()) {
    if (key == "model" || key == "keep_alive") continue;
    if (!legacy && (key == "input" || key == "dimensions")) {
      openai[key] = value;
    } else if (legacy && key == "prompt") {
      if (!value.is_string()) return invalid_request("'prompt' must be a string", "prompt");
      openai["input"] = value;
    } else if (!legacy && key == "truncate") {
      // The server never cuts an input: one too long is refused, which is what truncate false asks for.
      if (!value.is_boolean() && !value.is_null()) return invalid_request("'truncate' must be a boolean", key);
    } else if (key == "options" && (value.is_null() || (value.is_object() && value.empty()))) {
    } else {
      return invalid_request(
          fmt::format("'{}' is not supported by this server's {}", key, legacy ? "/api/embeddings" : "/api/embed"),
          key);
    }
  }
  auto model = body.find("model");
  if (model == body.end() || !model->is_string() || model->get<std::string>().empty())
    return invalid_request("model is required", "model");
  *model_out = model->get<std::string>();
  if (!openai.contains("input")) return invalid_request(legacy ? "'prompt' is required" : "'input' is required",
                                                        legacy ? "prompt" : "input");
  EmbeddingParams p;
  if (auto e = parse_embedding_params(json_text(openai), &p)) {
    if (legacy && e->param == "input") {
      e->param = "prompt";
      if (size_t at = e->message.find("'input'"); at != std::string::npos) e->message.replace(at, 7, "'prompt'");
    }
    return e;
  }
  *out = std::move(p);
  return std::nullopt;
}

bool ollama_model_matches(std::string_view requested, std::string_view served) {
  if (requested == served) return true;
  return requested.size() == served.size() + 7 && requested.starts_with(served) && requested.ends_with(":latest");
}

std::string ollama_model_name(std::string_view served) {
  return served.find(':') == std::string_view::npos ? std::string(served) + ":latest" : std::string(served);
}

ApiError ollama_model_not_found(std::string_view requested) {
  ApiError e;
  e.http_status = 404;
  e.type = "not_found_error";
  e.message = fmt::format("model \"{}\" not found, try pulling it first", requested);
  e.param = "model";
  return e;
}

ApiError ollama_no_thinking(std::string_view requested) {
  return invalid_request(fmt::format("\"{}\" does not support thinking", requested), "think");
}

std::string ollama_timestamp() { return ollama_timestamp(std::chrono::system_clock::now()); }

std::string ollama_timestamp(std::chrono::system_clock::time_point now) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  const std::time_t secs = std::time_t(ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ns % 1'000'000'000);
}

std::optional<std::chrono::milliseconds> parse_ollama_duration(std::string_view text) {
  // Go's time.ParseDuration: [-+]?(decimal unit)+, or "0"; a plain number here means seconds, as Ollama's number.
  if (text.empty() || text.size() > 64) return std::nullopt;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  auto is_number_char = [](char c) { return (c >= '0' && c <= '9') || c == '.'; };
  if (text.empty() || !is_number_char(text[0])) return std::nullopt;
  const bool plain = std::all_of(text.begin(), text.end(), is_number_char);
  double ms = 0;
  while (!text.empty()) {
    size_t n = 0;
    while (n < text.size() && is_number_char(text[n])) ++n;
    if (n == 0 || std::count(text.begin(), text.begin() + n, '.') > 1 || text.substr(0, n) == ".") return std::nullopt;
    const double value = std::stod(std::string(text.substr(0, n)));
    text.remove_prefix(n);
    if (plain) {
      ms = value * 1e3;
      break;
    }
    size_t u = 0;
    while (u < text.size() && !is_number_char(text[u])) ++u;
    const std::string_view unit = text.substr(0, u);
    text.remove_prefix(u);
    const double scale = unit == "ns"                                             ? 1e-6
                         : unit == "us" || unit == "\u00b5s" || unit == "\u03bcs" ? 1e-3
                         : unit == "ms"                                           ? 1.0
                         : unit == "s"                                            ? 1e3
                         : unit == "m"                                            ? 6e4
                         : unit == "h"                                            ? 3.6e6
                                                                                  : -1.0;
    if (scale < 0) return std::nullopt;
    ms += value * scale;
  }
  if (negative && ms > 0) return std::chrono::milliseconds(-1);
  if (ms > 1e15) return std::chrono::milliseconds(-1);  // longer than the server will run: for its life
  return std::chrono::milliseconds(int64_t(ms));
}

std::optional<std::chrono::milliseconds> parse_ollama_keep_alive(const ojson& value) {
  if (value.is_string()) return parse_ollama_duration(value.get<std::string>());
  if (!value.is_number()) return std::nullopt;
  const double seconds = value.get<double>();
  if (seconds < 0 || seconds > 1e12) return std::chrono::milliseconds(-1);
  return std::chrono::milliseconds(int64_t(seconds * 1e3));
}

std::string_view ollama_done_reason(FinishReason reason) { return reason == FinishReason::kLength ? "length" : "stop"; }

nlohmann::ordered_json ollama_arguments(const std::string& arguments) {
  Result<ojson> parsed = parse_ordered_json(arguments);
  if (parsed.ok() && parsed->is_object()) return *parsed;
  return ojson{{"_unparsed_arguments", arguments}};
}

std::string ollama_error_json(const ApiError& error) { return json_text({{"error", error.message}}); }

HttpResponse ollama_error_response(const ApiError& error) {
  HttpResponse r = error.to_response();
  r.body = ollama_error_json(error);
  return r;
}

namespace {

ojson ollama_details(const OllamaModelFacts& f) {
  return {{"parent_model", ""},
          {"format", f.format},
          {"family", f.family},
          {"families", ojson::array({f.family})},
          {"parameter_size", f.parameter_size},
          {"quantization_level", f.quantization_level}};
}

// The served model's digest stands for its name: there is no blob store to hash.
std::string ollama_digest(const OllamaModelFacts& f) {
  uint64_t h = 1469598103934665603ull;
  for (char c : f.name) h = (h ^ uint8_t(c)) * 1099511628211ull;
  return fmt::format("{:016x}{:016x}{:016x}{:016x}", h, h * 31, h * 131, h * 1031);
}

}  // namespace

std::string ollama_tags_json(const OllamaModelFacts& f) { return ollama_tags_json(std::span(&f, 1)); }

std::string ollama_tags_json(std::span<const OllamaModelFacts> models) {
  ojson list = ojson::array();
  for (const OllamaModelFacts& f : models) {
    const std::string name = ollama_model_name(f.name);
    list.push_back({{"name", name},
                    {"model", name},
                    {"modified_at", f.started_at},
                    {"size", f.size_bytes},
                    {"digest", ollama_digest(f)},
                    {"details", ollama_details(f)}});
  }
  return ojson{{"models", std::move(list)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string ollama_ps_json(const OllamaModelFacts& f) {
  const OllamaLoadedModel loaded{f, std::nullopt};
  return ollama_ps_json(std::span(&loaded, 1));
}

std::string ollama_ps_json(std::span<const OllamaLoadedModel> models) {
  ojson list = ojson::array();
  for (const OllamaLoadedModel& m : models) {
    const OllamaModelFacts& f = m.facts;
    const std::string name = ollama_model_name(f.name);
    // A model loaded for the server's life has no expiry to give: a far one, as Ollama's keep_alive -1 shows.
    list.push_back({{"name", name},
                    {"model", name},
                    {"size", f.size_bytes},
                    {"digest", ollama_digest(f)},
                    {"details", ollama_details(f)},
                    {"expires_at", m.expires_at ? ollama_timestamp(*m.expires_at) : "2318-08-04T00:00:00Z"},
                    {"size_vram", 0},
                    {"context_length", f.context_length}});
  }
  return ojson{{"models", std::move(list)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string ollama_show_json(const OllamaModelFacts& f) {
  ojson capabilities = ojson::array({"completion"});
  if (f.tools) capabilities.push_back("tools");
  if (f.thinking) capabilities.push_back("thinking");
  if (f.embeddings) capabilities.push_back("embedding");
  ojson info = {{"general.architecture", f.family}, {"general.name", f.name}};
  info[f.family + ".context_length"] = f.context_length;
  return ojson{{"modelfile", fmt::format("# served by pagoda\nFROM {}\n", f.name)},
               {"parameters", ""},
               {"template", f.chat_template},
               {"details", ollama_details(f)},
               {"model_info", std::move(info)},
               {"capabilities", std::move(capabilities)},
               {"modified_at", f.started_at}}
      .dump(-1, ' ', false, ojson::error_handler_t::replace);
}

std::string ollama_embed_json(const std::vector<std::vector<float>>& vectors, const std::string& model,
                              int64_t prompt_tokens, int64_t total_ns, bool legacy) {
  if (legacy) return json_text({{"embedding", vectors.empty() ? std::vector<float>{} : vectors[0]}});
  return json_text({{"model", model},
                    {"embeddings", vectors},
                    {"total_duration", total_ns},
                    {"load_duration", 0},
                    {"prompt_eval_count", prompt_tokens}});
}

}  // namespace pagoda::server
