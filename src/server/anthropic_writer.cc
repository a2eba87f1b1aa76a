// AnthropicWriter: Anthropic's message and stream events for a CompletionJob.
#include "server/anthropic_writer.h"

#include <nlohmann/json.hpp>

#include "server/anthropic_protocol.h"

namespace pagoda::server {

AnthropicWriter::AnthropicWriter(IdGenerator& ids, std::string model, bool forced_tool_call, bool may_think)
    : id_(ids.next("msg_")), model_(std::move(model)), forced_tool_call_(forced_tool_call), may_think_(may_think) {}

std::string AnthropicWriter::close_block() {
  if (!block_open_) return {};
  block_open_ = text_block_open_ = thinking_block_open_ = false;
  return anthropic_event("content_block_stop", {{"type", "content_block_stop"}, {"index", num_blocks_ - 1}});
}

std::string AnthropicWriter::cut_message() const {
  return anthropic_event(
      "error",
      nlohmann::json::parse(anthropic_error_json(invalid_request("the stream was cut: the client reads too slowly"))));
}

std::string AnthropicWriter::stream_open(int32_t prompt_tokens) {
  const nlohmann::json message = {{"id", id_},
                                  {"type", "message"},
                                  {"role", "assistant"},
                                  {"model", model_},
                                  {"content", nlohmann::json::array()},
                                  {"stop_reason", nullptr},
                                  {"stop_sequence", nullptr},
                                  {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", 0}}}};
  std::string out = anthropic_event("message_start", {{"type", "message_start"}, {"message", message}});
  if (!forced_tool_call_ && !may_think_) {
    out += anthropic_event("content_block_start", {{"type", "content_block_start"},
                                                   {"index", num_blocks_++},
                                                   {"content_block", {{"type", "text"}, {"text", ""}}}});
    block_open_ = text_block_open_ = true;
  }
  out += anthropic_event("ping", {{"type", "ping"}});
  return out;
}

std::string AnthropicWriter::stream_piece(const ChoiceResult& piece, bool, const std::optional<UsageFigures>&) {
  // The finish goes out with message_delta at the close, where the usage is known.
  std::string out;
  if (!piece.reasoning.empty()) {
    if (!thinking_block_open_) {
      out += close_block();
      out += anthropic_event("content_block_start",
                             {{"type", "content_block_start"},
                              {"index", num_blocks_++},
                              {"content_block", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}}});
      block_open_ = thinking_block_open_ = true;
    }
    out += anthropic_event("content_block_delta",
                           {{"type", "content_block_delta"},
                            {"index", num_blocks_ - 1},
                            {"delta", {{"type", "thinking_delta"}, {"thinking", piece.reasoning}}}});
  }
  if (!piece.text.empty()) {
    if (!text_block_open_) {
      out += close_block();
      out += anthropic_event("content_block_start", {{"type", "content_block_start"},
                                                     {"index", num_blocks_++},
                                                     {"content_block", {{"type", "text"}, {"text", ""}}}});
      block_open_ = text_block_open_ = true;
    }
    out += anthropic_event("content_block_delta", {{"type", "content_block_delta"},
                                                   {"index", num_blocks_ - 1},
                                                   {"delta", {{"type", "text_delta"}, {"text", piece.text}}}});
  }
  for (const ToolCallDelta& d : piece.tool_call_deltas) {
    if (!d.id.empty()) {  // a new call: its first piece has its id and name
      out += close_block();
      out += anthropic_event(
          "content_block_start",
          {{"type", "content_block_start"},
           {"index", num_blocks_++},
           {"content_block",
            {{"type", "tool_use"}, {"id", d.id}, {"name", d.name}, {"input", nlohmann::json::object()}}}});
      block_open_ = true;
    }
    if (!d.arguments.empty())
      out += anthropic_event("content_block_delta",
                             {{"type", "content_block_delta"},
                              {"index", num_blocks_ - 1},
                              {"delta", {{"type", "input_json_delta"}, {"partial_json", d.arguments}}}});
  }
  return out;
}

std::string AnthropicWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) {
  if (error != nullptr) return anthropic_event("error", nlohmann::json::parse(anthropic_error_json(*error)));
  const FinishReason reason = last.finish_reason.value_or(FinishReason::kLength);
  const nlohmann::json stop_sequence =
      last.stop_string.empty() ? nlohmann::json(nullptr) : nlohmann::json(last.stop_string);
  std::string out = close_block();
  return out +
         anthropic_event(
             "message_delta",
             {{"type", "message_delta"},
              {"delta",
               {{"stop_reason", std::string(anthropic_stop_reason(reason, last.stop_string, last.called_tools))},
                {"stop_sequence", stop_sequence}}},
              {"usage", {{"output_tokens", usage.completion_tokens}}}}) +
         anthropic_event("message_stop", {{"type", "message_stop"}});
}

std::string AnthropicWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  return anthropic_message(id_, model_, choices.empty() ? ChoiceResult{} : choices[0], usage);
}

HttpResponse AnthropicWriter::error_response(const ApiError& error) const { return anthropic_error_response(error); }

}  // namespace pagoda::server
