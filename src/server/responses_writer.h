// ResponsesWriter: the ResponseWriter of /v1/responses: the response object whole, or its typed stream events
// in order (response.created, response.in_progress; per output item output_item.added, for a reasoning
// content_part.added, reasoning_text.delta..., reasoning_text.done, content_part.done, for a message
// content_part.added, output_text.delta..., output_text.done, content_part.done, for a function call
// function_call_arguments.delta..., function_call_arguments.done; output_item.done; then response.completed, or
// response.incomplete when max_output_tokens cut it), each with its sequence_number. Owns the stream's output
// items as they grow. One choice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/response_writer.h"
#include "server/responses_protocol.h"

namespace pagoda::server {

class ResponsesWriter final : public ResponseWriter {
 public:
  // `echo`: the request's settings the response object repeats (parse_responses_request's).
  ResponsesWriter(IdGenerator& ids, std::string model, nlohmann::ordered_json echo);  // borrows `ids`
  const std::string& id() const override { return id_; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override { return error.to_response(); }

 private:
  std::string event(const nlohmann::ordered_json& data);  // numbered, "event: TYPE\ndata: JSON\n\n"
  nlohmann::ordered_json output_json(std::string_view status) const;
  std::string error_event(const ApiError& error) const;

  IdGenerator* ids_;  // its items' ids
  std::string id_;
  std::string model_;
  int64_t created_at_ = 0;
  nlohmann::ordered_json echo_;
  int64_t next_sequence_number_ = 0;
  // The stream's items in output order; reasoning_idx_ the reasoning's and message_idx_ the message's (-1 until
  // their text comes), call_idx_ each call's (by its index within the choice).
  std::vector<ResponseOutputItem> items_;
  int32_t reasoning_idx_ = -1;
  int32_t message_idx_ = -1;
  std::vector<int32_t> call_idx_;
};

}  // namespace pagoda::server
