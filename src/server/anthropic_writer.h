// AnthropicWriter: the ResponseWriter of /v1/messages: Anthropic's stream events (message_start,
// content_block_start, ping, content_block_delta text_delta..., content_block_stop, message_delta with the
// stop_reason and usage, message_stop; an "error" event when the stream ends early), the whole message and
// Anthropic's error body, all built by anthropic_protocol.h. One choice, one text block.
#pragma once

#include <cstdint>
#include <string>

#include "server/response_writer.h"

namespace pagoda::server {

class AnthropicWriter final : public ResponseWriter {
 public:
  explicit AnthropicWriter(std::string model);
  const std::string& id() const override { return id_; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override;

 private:
  std::string id_;
  std::string model_;
};

}  // namespace pagoda::server
