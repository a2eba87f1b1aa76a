// OpenAiWriter: the ResponseWriter of /v1/completions and /v1/chat/completions: OpenAI's chunks ("data: JSON"
// then "data: [DONE]"), the usage chunk when stream_options.include_usage asks for it, whole responses and
// OpenAI error bodies, all built by openai_protocol.h.
#pragma once

#include <cstdint>
#include <string>

#include "server/response_writer.h"

namespace pagoda::server {

class OpenAiWriter final : public ResponseWriter {
 public:
  // `legacy_functions`: tool calls as the legacy functions API's function_call (chat_response).
  OpenAiWriter(IdGenerator& ids, bool chat, std::string model, bool with_logprobs, bool include_usage,
               bool legacy_functions = false);
  const std::string& id() const override { return header_.id; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override { return error.to_response(); }

 private:
  bool chat_;
  bool with_logprobs_;
  bool include_usage_;
  bool legacy_functions_;
  ResponseHeader header_;
};

}  // namespace pagoda::server
