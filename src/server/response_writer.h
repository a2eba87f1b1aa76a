// ResponseWriter: how a CompletionJob's results become one API's bytes: OpenAI's completions and chat
// (openai_writer.h), Anthropic's messages (anthropic_writer.h), OpenAI's Responses (responses_writer.h) or
// Ollama's chat and generate (ollama_writer.h). The job decides what happened (pieces of text
// and tool calls, finishes, usage, errors); the writer only says it in its API's shapes, whole or as SSE events.
// No engine, no sockets.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/http_message.h"
#include "server/openai_protocol.h"
#include "server/response_id.h"

namespace pagoda::server {

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual const std::string& id() const = 0;  // the response's id (also the log line's)
  // The bytes written when the stream is cut for a slow reader, before the connection ends.
  virtual std::string cut_message() const = 0;
  // The streamed body's media type: SSE, or Ollama's NDJSON.
  virtual std::string stream_content_type() const { return "text/event-stream"; }
  // The stream's first bytes, right after its headers (`prompt_tokens`: the first prompt's); may be empty.
  virtual std::string stream_open(int32_t prompt_tokens) = 0;
  // One streamed piece of a choice (text, tool-call pieces, logprobs, its finish); `first`: the choice's first
  // piece. Empty when this API has nothing to send for it.
  virtual std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) = 0;
  // The stream's last bytes: the error that ended it early, or its end (`last`: how the first choice finished).
  virtual std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) = 0;
  // A whole (non-streamed) response's body.
  virtual std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) = 0;
  // An error as this API shapes it, with its HTTP status.
  virtual HttpResponse error_response(const ApiError& error) const = 0;
};

}  // namespace pagoda::server
