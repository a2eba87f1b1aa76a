// RerankJob: one /v1/rerank (or /rerank, /v1/reranking, /reranking) request inside the server: a rank-pooling
// request in the engine per document (its query/document pair, framed by server/rerank_protocol.h), each coming
// back as the classification head's outputs, of which the first is the document's score; then the one response
// body in the request's shape (rerank_protocol's rerank_response). All its work runs on its exchange's strand (the
// engine's listeners only post there), so no lock guards its state. Ends every request it started: on a client
// disconnect, a deadline or shutdown it cancels them in the engine and waits for their final events.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/completion_job.h"
#include "server/rerank_protocol.h"
#include "server/server_job.h"

namespace pagoda::server {

class RerankJob : public ServerJob, public std::enable_shared_from_this<RerankJob> {
 public:
  RerankJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, RerankParams params,
            std::function<void()> on_done);
  // Submits one rank-pooling request per pair (on the strand). A refusal cancels what was already submitted and
  // answers with the engine's error (400, 429, 503); true when the job is running.
  bool start(std::vector<std::vector<TokenId>> pairs);
  void expire(ApiError why) override;
  void fail(const std::string& what) override;
  HttpExchange& exchange() override { return *exchange_; }

 private:
  struct Pair {
    RequestHandle handle;
    std::vector<float> scores;  // the head's outputs, once done
    int32_t num_prompt_tokens = 0;
    bool done = false;
    FinishReason finish_reason = FinishReason::kAbort;
  };

  void drain();
  void client_gone();
  void cancel_running();
  void complete();
  void log_line(int status, int64_t prompt_tokens, const std::string& finish);

  JobContext ctx_;
  std::shared_ptr<HttpExchange> exchange_;
  RerankParams params_;
  std::function<void()> on_done_;
  std::string id_;
  std::vector<Pair> pairs_;
  int32_t num_done_ = 0;
  bool client_gone_ = false;
  bool completed_ = false;
  std::optional<ApiError> error_;
  int64_t start_us_ = 0;
};

}  // namespace pagoda::server
