// PoolingJob: what an embeddings request and a rerank request share inside the server: one prefill-only pooling
// request in the engine per input (the engine batches them with everything else), their vectors coming back, the
// cancelling of what still runs on a client's disconnect, a deadline or shutdown (waiting for the final events), the
// error answer, the metrics count and the log line. What the vectors become is the subclass's: `success_body` and
// `error_body`. All its work runs on its exchange's strand (the engine's listeners only post there), so no lock
// guards its state. Must not know any protocol's shapes.
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
#include "server/server_job.h"

namespace pagoda::server {

class PoolingJob : public ServerJob, public std::enable_shared_from_this<PoolingJob> {
 public:
  // Submits one prefill-only request per input, pooled as `pooling` (on the strand). A refusal cancels what was
  // already submitted and answers with the engine's error (400, 429, 503); true when the job is running.
  bool start(std::vector<std::vector<TokenId>> inputs, Pooling pooling);
  void expire(ApiError why) override;
  // Something threw inside the job: cancels what still runs and answers 500. On the strand.
  void fail(const std::string& what) override;
  HttpExchange& exchange() override { return *exchange_; }

 protected:
  struct Pooled {
    std::vector<float> vector;  // the pooled state (or a head's outputs), f32
    int32_t num_prompt_tokens = 0;
  };
  // `id_prefix` names the log line's id ("embd-", "rrnk-").
  PoolingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, const std::string& id_prefix,
             std::function<void()> on_done);
  // The answer once every input is done, in input order; `prompt_tokens` is their sum.
  virtual HttpResponse success_body(std::vector<Pooled> results, int64_t prompt_tokens) = 0;
  // An error in the shape of the API asked.
  virtual HttpResponse error_body(const ApiError& e) const { return e.to_response(); }

  JobContext ctx_;
  int64_t start_us_ = 0;

 private:
  struct Input {
    RequestHandle handle;
    Pooled pooled;
    bool done = false;
    FinishReason finish_reason = FinishReason::kAbort;
  };

  void drain();  // takes every waiting engine event (fails the job if anything throws)
  void client_gone();
  void cancel_running();
  void complete();  // every input is done: the response, metrics, the log line
  void log_line(int status, int64_t prompt_tokens, const std::string& finish);

  std::shared_ptr<HttpExchange> exchange_;
  std::function<void()> on_done_;
  std::string id_;
  std::vector<Input> inputs_;
  int32_t num_done_ = 0;
  bool client_gone_ = false;
  bool completed_ = false;
  std::optional<ApiError> error_;
};

}  // namespace pagoda::server
