// Ollama's API shapes (POST /api/chat, /api/generate, /api/embed, /api/embeddings; GET /api/tags, /api/ps,
// /api/version; POST /api/show): request bodies to the chat or completion parameters a CompletionJob runs (or an
// ApiError naming the field), and the JSON objects of its answers and its error body ({"error": "..."}). Pure
// functions on strings: no engine, no sockets, no clock but the timestamp's.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "server/api_error.h"
#include "server/embeddings_protocol.h"
#include "server/http_message.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

// Ollama's sampling defaults (its Modelfile defaults), used where a request leaves them out.
inline constexpr float kOllamaTemperature = 0.8f;
inline constexpr int32_t kOllamaTopK = 40;
inline constexpr float kOllamaTopP = 0.9f;

struct OllamaRequest {
  CompletionParams params;  // chat (through the template) or, for /api/generate with raw, a plain completion
  std::string model;        // as the client named it: every answer repeats it
  // options accepted without effect on this server (hardware and runtime hints: num_gpu, num_thread, ...), for
  // the log line that says so.
  std::vector<std::string> ignored_options;
  std::optional<int64_t> num_ctx;  // options.num_ctx: the request's context window (the server caps it)
  std::optional<std::chrono::milliseconds> keep_alive;  // how long the model stays loaded after it (-1 ms: always)
  bool load_only = false;          // no prompt (generate) or no messages (chat): Ollama's "load the model"
  // think: true/false, or "low"/"medium"/"high" (think_level, with think true): the server maps them onto the chat
  // template's enable_thinking and reasoning_effort, and refuses them for a model without reasoning syntax.
  std::optional<bool> think;
  std::optional<std::string> think_level;
};

// /api/chat: model, messages (role, content, tool_calls with object arguments, tool_name, tool_call_id), tools,
// format ("json" or a JSON schema), options, stream (default true), keep_alive, think, and pagoda's tool_choice
// (OpenAI's values), which Ollama lacks. images, a non-empty thinking and unknown fields or options are errors
// naming them.
std::optional<ApiError> parse_ollama_chat(std::string_view body, OllamaRequest* out);
// /api/generate: model, prompt, system, raw (the prompt as is, no template), format, options, stream,
// keep_alive, think. suffix, images, template and context are errors naming them.
std::optional<ApiError> parse_ollama_generate(std::string_view body, OllamaRequest* out);

// /api/embed (input: a string or strings; truncate false only where nothing needs cutting: the server cuts
// nothing, dimensions) and the legacy /api/embeddings (prompt: one string), as embedding parameters.
// `model_out`: the name the client gave.
std::optional<ApiError> parse_ollama_embed(std::string_view body, bool legacy, EmbeddingParams* out,
                                           std::string* model_out);

// Whether a name a client sent means the served model: the same name, or it with Ollama's default tag
// ":latest".
bool ollama_model_matches(std::string_view requested, std::string_view served);
// The served model's name as Ollama lists it: with ":latest" when it has no tag.
std::string ollama_model_name(std::string_view served);
// Ollama's "model \"x\" not found, try pulling it first" (404).
ApiError ollama_model_not_found(std::string_view requested);
// Ollama's answer to think on a model that cannot think: "\"x\" does not support thinking" (400).
ApiError ollama_no_thinking(std::string_view requested);

// RFC 3339 in UTC with nanoseconds, as Ollama's created_at: 2024-06-04T14:38:31.837530000Z.
std::string ollama_timestamp();
std::string ollama_timestamp(std::chrono::system_clock::time_point at);
// Ollama's keep_alive: a Go duration string ("5m", "1h30m", "250ms", "0"), a number of seconds (also as a string);
// negative means for the server's life and is returned as -1 ms. nullopt: none of these.
std::optional<std::chrono::milliseconds> parse_ollama_duration(std::string_view text);
std::optional<std::chrono::milliseconds> parse_ollama_keep_alive(const nlohmann::ordered_json& value);
// "stop" (the model's end, a stop string, tool calls) or "length".
std::string_view ollama_done_reason(FinishReason reason);
// A call's arguments text as the object Ollama sends (text that is no object, a call cut short, as
// {"_unparsed_arguments": text}).
nlohmann::ordered_json ollama_arguments(const std::string& arguments);

// {"error": "message"} with the error's status.
HttpResponse ollama_error_response(const ApiError& error);
std::string ollama_error_json(const ApiError& error);

// What /api/tags, /api/show and /api/ps say of the one model served.
struct OllamaModelFacts {
  std::string name;          // served name
  std::string family;        // general.architecture, e.g. "llama"
  std::string format = "gguf";
  std::string parameter_size;      // "7.6B", "260K"
  std::string quantization_level;  // "Q4_0", "F32"...
  int64_t size_bytes = 0;          // the weights' bytes
  int64_t context_length = 0;      // the server's context
  std::string chat_template;       // the template text a Jinja model carries; empty otherwise
  std::string started_at;          // created_at of the server (modified_at)
  bool embeddings = false;         // the engine pools hidden states (capability "embedding")
  bool tools = false;              // the template renders tools (capability "tools")
  bool thinking = false;           // the template has reasoning syntax (capability "thinking")
};
std::string ollama_tags_json(const OllamaModelFacts& facts);
std::string ollama_tags_json(std::span<const OllamaModelFacts> models);
std::string ollama_show_json(const OllamaModelFacts& facts);
std::string ollama_ps_json(const OllamaModelFacts& facts);  // loaded for the server's life
struct OllamaLoadedModel {
  OllamaModelFacts facts;
  std::optional<std::chrono::system_clock::time_point> expires_at;  // nullopt: never unloaded
};
std::string ollama_ps_json(std::span<const OllamaLoadedModel> models);
// {"model", "embeddings": [[...]], "total_duration", "load_duration", "prompt_eval_count"}, or the legacy
// {"embedding": [...]} of /api/embeddings.
std::string ollama_embed_json(const std::vector<std::vector<float>>& vectors, const std::string& model,
                              int64_t prompt_tokens, int64_t total_ns, bool legacy);

}  // namespace pagoda::server
