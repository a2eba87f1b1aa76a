// PoolingJob: the engine side of an embeddings or rerank request, from submission to the logged answer.
#include "server/pooling_job.h"

#include <fmt/format.h>

namespace pagoda::server {

PoolingJob::PoolingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, const std::string& id_prefix,
                       std::function<void()> on_done)
    : ctx_(std::move(ctx)), exchange_(std::move(exchange)), on_done_(std::move(on_done)) {
  id_ = ctx_.ids->next(id_prefix);  // the log line's id
  start_us_ = ctx_.engine->now_us();
}

void PoolingJob::log_line(int status, int64_t prompt_tokens, const std::string& finish) {
  ctx_.metrics->record_http_request(status);
  RequestLogEntry e;
  e.id = id_;
  e.path = exchange_->request().path;
  e.status = status;
  e.num_choices = int32_t(inputs_.size());
  e.prompt_tokens = int32_t(prompt_tokens);
  e.e2e_ms = double(ctx_.engine->now_us() - start_us_) / 1e3;
  e.finish = finish;
  ctx_.log->write(e);
}

bool PoolingJob::start(std::vector<std::vector<TokenId>> inputs, Pooling pooling) {
  for (std::vector<TokenId>& tokens : inputs) {
    GenerateRequest req;
    const int32_t num_tokens = int32_t(tokens.size());
    req.prompt = std::move(tokens);
    req.prefill_only = true;
    req.pooling = pooling;
    Result<RequestHandle> handle = ctx_.engine->submit(std::move(req));
    if (!handle.ok()) {
      for (Input& in : inputs_) ctx_.engine->cancel(in.handle.id);
      inputs_.clear();
      const ApiError e = api_error_from_status(handle.status());
      log_line(e.http_status, 0, "error: " + e.message);
      exchange_->respond(error_body(e));
      return false;
    }
    Input in;
    in.handle = *handle;
    in.pooled.num_prompt_tokens = num_tokens;
    inputs_.push_back(std::move(in));
  }
  std::weak_ptr<PoolingJob> weak = weak_from_this();
  exchange_->set_on_close([weak] {
    if (auto job = weak.lock()) job->client_gone();
  });
  // The listener runs on the engine's thread: it only posts the work onto this job's strand.
  for (Input& in : inputs_) {
    in.handle.stream->set_listener([weak] {
      if (auto job = weak.lock()) job->exchange_->post([job] { job->drain(); });
    });
  }
  return true;
}

void PoolingJob::drain() {
  try {
    for (Input& in : inputs_) {
      while (!in.done) {
        std::optional<RequestOutput> out = in.handle.stream->try_next();
        if (!out) break;
        if (!out->finished) continue;
        in.done = true;
        ++num_done_;
        in.finish_reason = out->finish_reason;
        in.pooled.vector = std::move(out->embedding);
      }
    }
    if (!completed_ && num_done_ == int32_t(inputs_.size())) complete();
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void PoolingJob::fail(const std::string& what) {
  if (completed_) return;
  ctx_.log->message(fmt::format("internal error in {}: {}", id_, what));
  cancel_running();
  for (Input& in : inputs_) {
    if (!in.done) ++num_done_;
    in.done = true;
    in.finish_reason = FinishReason::kAbort;
  }
  error_ = ApiError{500, "internal server error; the server logged the cause", "server_error", {}, {}};
  complete();
}

void PoolingJob::cancel_running() {
  for (Input& in : inputs_)
    if (!in.done) ctx_.engine->cancel(in.handle.id);
}

void PoolingJob::client_gone() {
  if (completed_) return;
  client_gone_ = true;
  cancel_running();
}

void PoolingJob::expire(ApiError why) {
  if (completed_ || error_) return;
  error_ = std::move(why);
  cancel_running();
}

void PoolingJob::complete() {
  completed_ = true;
  for (Input& in : inputs_) in.handle.stream->set_listener(nullptr);
  int64_t prompt_tokens = 0;
  bool cut_short = false;
  for (const Input& in : inputs_) {
    prompt_tokens += in.pooled.num_prompt_tokens;
    cut_short |= in.finish_reason != FinishReason::kStop || in.pooled.vector.empty();
  }
  if (cut_short && !error_ && !client_gone_)
    error_ = ApiError{
        500, "the engine failed while running the request; the server logged the cause", "server_error", {}, {}};
  int status = 200;
  std::string finish = "stop";
  if (client_gone_) {
    status = 499;  // nginx's "client closed request"
    finish = "client disconnected";
  } else if (cut_short) {
    status = error_->http_status;
    finish = "error: " + error_->message;
    exchange_->respond(error_body(*error_));
  } else {
    std::vector<Pooled> results;
    results.reserve(inputs_.size());
    for (Input& in : inputs_) results.push_back(std::move(in.pooled));
    exchange_->respond(success_body(std::move(results), prompt_tokens));
  }
  log_line(status, prompt_tokens, finish);
  if (on_done_) std::exchange(on_done_, nullptr)();
}

}  // namespace pagoda::server
