// AnthropicWriter: Anthropic's message and stream events for a CompletionJob.
#include "server/anthropic_writer.h"

#include <nlohmann/json.hpp>

#include "server/anthropic_protocol.h"

namespace pagoda::server {

AnthropicWriter::AnthropicWriter(std::string model) : id_(new_message_id()), model_(std::move(model)) {}

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
  return anthropic_event("message_start", {{"type", "message_start"}, {"message", message}}) +
         anthropic_event(
             "content_block_start",
             {{"type", "content_block_start"}, {"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}) +
         anthropic_event("ping", {{"type", "ping"}});
}

std::string AnthropicWriter::stream_piece(const ChoiceResult& piece, bool, const std::optional<UsageFigures>&) {
  // The finish goes out with message_delta at the close, where the usage is known.
  if (piece.text.empty()) return {};
  return anthropic_event(
      "content_block_delta",
      {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", piece.text}}}});
}

std::string AnthropicWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) {
  if (error != nullptr) return anthropic_event("error", nlohmann::json::parse(anthropic_error_json(*error)));
  const FinishReason reason = last.finish_reason.value_or(FinishReason::kLength);
  const nlohmann::json stop_sequence =
      last.stop_string.empty() ? nlohmann::json(nullptr) : nlohmann::json(last.stop_string);
  return anthropic_event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}) +
         anthropic_event("message_delta",
                         {{"type", "message_delta"},
                          {"delta",
                           {{"stop_reason", std::string(anthropic_stop_reason(reason, last.stop_string))},
                            {"stop_sequence", stop_sequence}}},
                          {"usage", {{"output_tokens", usage.completion_tokens}}}}) +
         anthropic_event("message_stop", {{"type", "message_stop"}});
}

std::string AnthropicWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  return anthropic_message(id_, model_, choices.empty() ? ChoiceResult{} : choices[0], usage);
}

HttpResponse AnthropicWriter::error_response(const ApiError& error) const { return anthropic_error_response(error); }

}  // namespace pagoda::server
