// LlamaWriter: llama-server's /completion objects for a CompletionJob.
#include "server/llama_writer.h"

#include <fmt/format.h>

#include <atomic>

#include "server/json_text.h"
#include "server/llama_protocol.h"
#include "server/response_id.h"

namespace pagoda::server {

LlamaWriter::LlamaWriter(IdGenerator& ids, std::string model, nlohmann::json settings, std::string prompt, bool return_tokens,
                         bool with_probs)
    : model_(std::move(model)),
      settings_(std::move(settings)),
      prompt_(std::move(prompt)),
      return_tokens_(return_tokens),
      with_probs_(with_probs),
      start_(std::chrono::steady_clock::now()) {
  id_ = ids.next("llama-cmpl-");
}

std::string LlamaWriter::cut_message() const {
  return sse_event(invalid_request("the stream was cut: the client reads too slowly").to_json());
}

std::string LlamaWriter::stream_open(int32_t prompt_tokens) {
  prompt_tokens_ = prompt_tokens;
  return {};
}

std::string LlamaWriter::stream_piece(const ChoiceResult& piece, bool, const std::optional<UsageFigures>&) {
  if (piece.text.empty() && piece.token_ids.empty()) return {};
  predicted_ += int32_t(piece.token_ids.size());
  has_new_line_ = has_new_line_ || piece.text.find('\n') != std::string::npos;
  nlohmann::json j = {{"index", 0},
                      {"content", piece.text},
                      {"tokens", piece.token_ids},
                      {"stop", false},
                      {"id_slot", 0},
                      {"tokens_predicted", predicted_},
                      {"tokens_evaluated", prompt_tokens_}};
  if (with_probs_ && !piece.logprobs.empty())
    j["completion_probabilities"] = llama_completion_probabilities(piece.logprobs);
  return sse_event(json_text(j));
}

nlohmann::json LlamaWriter::final_object(const ChoiceResult& c, const UsageFigures& usage) const {
  const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  const double prompt_ms = std::min(total_ms, usage.ttft_ms);
  const double predicted_ms = total_ms - prompt_ms;
  const FinishReason reason = c.finish_reason.value_or(FinishReason::kLength);
  auto per_token = [](double ms, int32_t n) { return n > 0 ? ms / n : 0.0; };
  auto per_second = [](double ms, int32_t n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return {{"index", 0},
          {"content", c.text},
          {"tokens", return_tokens_ ? nlohmann::json(c.token_ids) : nlohmann::json::array()},
          {"id_slot", 0},
          {"stop", true},
          {"model", model_},
          {"tokens_predicted", usage.completion_tokens},
          {"tokens_evaluated", usage.prompt_tokens},
          {"generation_settings", settings_},
          {"prompt", prompt_},
          {"has_new_line", has_new_line_ || c.text.find('\n') != std::string::npos},
          {"truncated", false},
          {"stop_type", llama_stop_type(reason, c.stop_string)},
          {"stopping_word", c.stop_string},
          {"tokens_cached", usage.cached_tokens},
          {"timings",
           {{"cache_n", usage.cached_tokens},
            {"prompt_n", usage.prompt_tokens - usage.cached_tokens},
            {"prompt_ms", prompt_ms},
            {"prompt_per_token_ms", per_token(prompt_ms, usage.prompt_tokens - usage.cached_tokens)},
            {"prompt_per_second", per_second(prompt_ms, usage.prompt_tokens - usage.cached_tokens)},
            {"predicted_n", usage.completion_tokens},
            {"predicted_ms", predicted_ms},
            {"predicted_per_token_ms", per_token(predicted_ms, usage.completion_tokens)},
            {"predicted_per_second", per_second(predicted_ms, usage.completion_tokens)}}}};
}

std::string LlamaWriter::stream_close(const ApiError* error, const UsageFigures& usage, const ChoiceResult& last) {
  if (error != nullptr) return sse_event(error->to_json());
  ChoiceResult end;
  end.finish_reason = last.finish_reason;
  end.stop_string = last.stop_string;
  return sse_event(json_text(final_object(end, usage)));
}

std::string LlamaWriter::whole_response(const std::vector<ChoiceResult>& choices, const UsageFigures& usage) {
  const ChoiceResult c = choices.empty() ? ChoiceResult{} : choices[0];
  nlohmann::json j = final_object(c, usage);
  if (with_probs_) j["completion_probabilities"] = llama_completion_probabilities(c.logprobs);
  return json_text(j);
}

}  // namespace pagoda::server
