// LlamaWriter: the ResponseWriter of llama-server's /completion: SSE events without a [DONE] ("data: {index,
// content, tokens, stop: false, id_slot, tokens_predicted, tokens_evaluated}" per piece, then one with stop true,
// stop_type, stopping_word, generation_settings and timings in ms), the whole answer in the last event's shape
// with its content (and tokens with return_tokens, completion_probabilities with n_probs), and OpenAI's error
// body, which llama-server's resembles. Keeps its own clock for the timings; no engine, no sockets.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/response_writer.h"

namespace pagoda::server {

class LlamaWriter final : public ResponseWriter {
 public:
  // `settings`: the generation_settings to echo (llama_generation_settings); `prompt`: the prompt's text.
  LlamaWriter(IdGenerator& ids, std::string model, nlohmann::json settings, std::string prompt, bool return_tokens,
              bool with_probs);
  const std::string& id() const override { return id_; }
  std::string cut_message() const override;
  std::string stream_open(int32_t prompt_tokens) override;
  std::string stream_piece(const ChoiceResult& piece, bool first, const std::optional<UsageFigures>& usage) override;
  std::string stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) override;
  std::string whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) override;
  HttpResponse error_response(const ApiError& error) const override { return error.to_response(); }

 private:
  nlohmann::json final_object(const ChoiceResult& c, const UsageFigures& usage) const;

  std::string model_;
  nlohmann::json settings_;
  std::string prompt_;
  bool return_tokens_;
  bool with_probs_;
  std::string id_;
  std::chrono::steady_clock::time_point start_;
  int32_t prompt_tokens_ = 0;
  int32_t predicted_ = 0;  // tokens streamed so far
  bool has_new_line_ = false;
};

}  // namespace pagoda::server
