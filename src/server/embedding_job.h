// EmbeddingJob: one /v1/embeddings (or Ollama's /api/embed, /api/embeddings) request inside the server: a pooling request in the engine per input (the
// engine batches them with everything else), the vectors coming back, and the one JSON body they become (L2
// normalized unless asked otherwise, float or base64). All its work runs on its exchange's strand (the engine's
// listeners only post there), so no lock guards its state. Ends every request it started: on a client
// disconnect, a deadline or shutdown it cancels them in the engine and waits for their final events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/pooling.h"
#include "server/completion_job.h"
#include "server/embeddings_protocol.h"
#include "server/ollama_protocol.h"
#include "server/server_job.h"

namespace pagoda::server {

class EmbeddingJob : public ServerJob, public std::enable_shared_from_this<EmbeddingJob> {
 public:
  EmbeddingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, EmbeddingParams params,
               std::function<void()> on_done);
  // Submits one pooling request per input (on the strand). A refusal cancels what was already submitted and
  // answers with the engine's error (400, 429, 503); true when the job is running.
  bool start(std::vector<std::vector<TokenId>> inputs, Pooling pooling);
  void expire(ApiError why) override;
  // Something threw inside the job: cancels what still runs and answers 500. On the strand.
  void fail(const std::string& what) override;
  HttpExchange& exchange() override { return *exchange_; }

 private:
  struct Input {
    RequestHandle handle;
    std::vector<float> embedding;  // f32 [dim], once done
    int32_t num_prompt_tokens = 0;
    bool done = false;
    FinishReason finish_reason = FinishReason::kAbort;
  };

  void drain();  // takes every waiting engine event (fails the job if anything throws)
  void client_gone();
  void cancel_running();
  void complete();  // every input is done: the response, metrics, the log line
  HttpResponse error_response(const ApiError& e) const {  // in the shape of the API asked
    return params_.api == EmbeddingParams::Api::kOpenAi ? e.to_response() : ollama_error_response(e);
  }

  JobContext ctx_;
  std::shared_ptr<HttpExchange> exchange_;
  EmbeddingParams params_;
  std::function<void()> on_done_;
  std::string id_;
  std::vector<Input> inputs_;
  int32_t num_done_ = 0;
  bool client_gone_ = false;
  bool completed_ = false;
  std::optional<ApiError> error_;  // why the request ended early
  int64_t start_us_ = 0;
};

}  // namespace pagoda::server
