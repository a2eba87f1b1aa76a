// OllamaWriter: the ResponseWriter of Ollama's /api/chat and /api/generate: NDJSON lines (one JSON object a
// line: {"model", "created_at", "message"|"response", "done": false} per piece, then the last with done true,
// done_reason and the timings in nanoseconds: total_duration, load_duration, prompt_eval_count,
// prompt_eval_duration, eval_count, eval_duration), the whole answer in the last line's shape, and Ollama's
// {"error": "..."} body. Tool calls go out whole (arguments as objects) in one line before the last, as Ollama
// sends them. Keeps its own clock for the durations; no engine, no sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "server/response_writer.h"

namespace pagoda::server {

class OllamaWriter final : public ResponseWriter {
 public:
  // `chat`: /api/chat's message objects, else /api/generate's response text. `model`: the name the client gave.
  OllamaWriter(IdGenerator& ids, bool chat, std::string model);
  const std::string& id() const override { return id_; }
  std::string stream_content_type() const override { return "application/x-ndjson"; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override;

 private:
  // The last object: done, done_reason, the counts and durations; `text`, `reasoning` (Ollama's thinking) and `calls`
  // its content.
  std::string final_object(const std::string& text, const std::string& reasoning, const std::vector<ToolCall>& calls,
                           const UsageFigures& usage, FinishReason reason) const;

  bool chat_;
  std::string model_;
  std::string id_;
  std::chrono::steady_clock::time_point start_;
  std::vector<ToolCall> calls_;  // streamed calls, gathered from their pieces
};

}  // namespace pagoda::server
