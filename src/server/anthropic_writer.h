// AnthropicWriter: the ResponseWriter of /v1/messages: Anthropic's stream events (message_start,
// content_block_start, ping, content_block_delta text_delta..., content_block_stop, message_delta with the
// stop_reason and usage, message_stop; an "error" event when the stream ends early), the whole message and
// Anthropic's error body, all built by anthropic_protocol.h. One choice: a thinking block (thinking_delta pieces)
// when the model reasons, a text block (opened at the start unless a tool call is forced or the output may begin
// with a reasoning), then a tool_use block per call, its input streamed as input_json_delta pieces.
#pragma once

#include <cstdint>
#include <string>

#include "server/response_writer.h"

namespace pagoda::server {

class AnthropicWriter final : public ResponseWriter {
 public:
  // `forced_tool_call`: the output is a call (tool_choice any or tool), so no text block is opened up front;
  // nor with `may_think` (the output is read for a reasoning, whose thinking block comes first).
  AnthropicWriter(IdGenerator& ids, std::string model, bool forced_tool_call, bool may_think = false);
  const std::string& id() const override { return id_; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override;

 private:
  std::string close_block();  // content_block_stop of the open block, if one is

  std::string id_;
  std::string model_;
  bool forced_tool_call_;
  bool may_think_;
  int32_t num_blocks_ = 0;   // content blocks started
  bool block_open_ = false;  // the last one started is not stopped yet
  bool text_block_open_ = false;
  bool thinking_block_open_ = false;
};

}  // namespace pagoda::server
