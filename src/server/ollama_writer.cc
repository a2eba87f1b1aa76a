// OllamaWriter: Ollama's NDJSON objects for a CompletionJob.
#include "server/ollama_writer.h"

#include <fmt/format.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "server/ollama_protocol.h"
#include "server/response_id.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

std::string ollama_line(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace) + "\n"; }

ojson ollama_tool_calls_json(const std::vector<ToolCall>& calls) {
  ojson out = ojson::array();
  for (size_t i = 0; i < calls.size(); ++i)
    out.push_back({{"id", calls[i].id},
                   {"function",
                    {{"index", i}, {"name", calls[i].name}, {"arguments", ollama_arguments(calls[i].arguments)}}}});
  return out;
}

}  // namespace

OllamaWriter::OllamaWriter(IdGenerator& ids, bool chat, std::string model)
    : chat_(chat), model_(std::move(model)), start_(std::chrono::steady_clock::now()) {
  id_ = ids.next("ollama-");
}

std::string OllamaWriter::cut_message() const {
  return ollama_line({{"error", "the stream was cut: the client reads too slowly"}});
}

std::string OllamaWriter::stream_open(int32_t) { return {}; }

std::string OllamaWriter::stream_piece(const ChoiceResult& piece, bool, const std::optional<UsageFigures>&) {
  for (const ToolCallDelta& d : piece.tool_call_deltas) {
    if (!d.id.empty() || calls_.empty())
      calls_.push_back({d.id, d.name, d.arguments});
    else
      calls_.back().arguments += d.arguments;
  }
  if (piece.text.empty() && piece.reasoning.empty()) return {};
  ojson j = {{"model", model_}, {"created_at", ollama_timestamp()}};
  // A model's reasoning (the server's --reasoning-format) goes apart, in Ollama's `thinking`.
  if (chat_) {
    j["message"] = {{"role", "assistant"}, {"content", piece.text}};
    if (!piece.reasoning.empty()) j["message"]["thinking"] = piece.reasoning;
  } else {
    j["response"] = piece.text;
    if (!piece.reasoning.empty()) j["thinking"] = piece.reasoning;
  }
  j["done"] = false;
  return ollama_line(j);
}

std::string OllamaWriter::final_object(const std::string& text, const std::string& reasoning,
                                       const std::vector<ToolCall>& calls, const UsageFigures& usage,
                                       FinishReason reason) const {
  const int64_t total_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  const int64_t prompt_ns = std::min<int64_t>(total_ns, int64_t(usage.ttft_ms * 1e6));
  ojson j = {{"model", model_}, {"created_at", ollama_timestamp()}};
  if (chat_) {
    j["message"] = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) j["message"]["thinking"] = reasoning;
    if (!calls.empty()) j["message"]["tool_calls"] = ollama_tool_calls_json(calls);
  } else {
    j["response"] = text;
    if (!reasoning.empty()) j["thinking"] = reasoning;
  }
  j["done"] = true;
  j["done_reason"] = ollama_done_reason(reason);
  j["total_duration"] = total_ns;
  j["load_duration"] = 0;  // the model was loaded when the server started
  j["prompt_eval_count"] = usage.prompt_tokens;
  j["prompt_eval_duration"] = prompt_ns;
  j["eval_count"] = usage.completion_tokens;
  j["eval_duration"] = total_ns - prompt_ns;
  return ollama_line(j);
}

std::string OllamaWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) {
  if (error != nullptr) return ollama_line({{"error", error->message}});
  std::string out;
  if (chat_ && !calls_.empty()) {
    // Ollama sends the calls whole, in a line of their own before the last.
    out = ollama_line({{"model", model_},
                {"created_at", ollama_timestamp()},
                {"message", {{"role", "assistant"}, {"content", ""}, {"tool_calls", ollama_tool_calls_json(calls_)}}},
                {"done", false}});
  }
  return out + final_object("", "", {}, usage, last.finish_reason.value_or(FinishReason::kLength));
}

std::string OllamaWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  const ChoiceResult c = choices.empty() ? ChoiceResult{} : choices[0];
  std::string body =
      final_object(c.text, c.reasoning, c.tool_calls, usage, c.finish_reason.value_or(FinishReason::kLength));
  body.pop_back();  // a whole body is one object, no line end
  return body;
}

HttpResponse OllamaWriter::error_response(const ApiError& error) const { return ollama_error_response(error); }

}  // namespace pagoda::server
