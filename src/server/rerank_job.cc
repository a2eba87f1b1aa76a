// RerankJob: from rank-pooled engine outputs to a rerank response.
#include "server/rerank_job.h"

#include <fmt/format.h>

namespace pagoda::server {

RerankJob::RerankJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, RerankParams params,
                     std::function<void()> on_done)
    : ctx_(std::move(ctx)), exchange_(std::move(exchange)), params_(std::move(params)), on_done_(std::move(on_done)) {
  id_ = ctx_.ids->next("rrnk-");  // the log line's id
  start_us_ = ctx_.engine->now_us();
}

void RerankJob::log_line(int status, int64_t prompt_tokens, const std::string& finish) {
  ctx_.metrics->record_http_request(status);
  RequestLogEntry e;
  e.id = id_;
  e.path = exchange_->request().path;
  e.status = status;
  e.num_choices = int32_t(pairs_.size());
  e.prompt_tokens = int32_t(prompt_tokens);
  e.e2e_ms = double(ctx_.engine->now_us() - start_us_) / 1e3;
  e.finish = finish;
  ctx_.log->write(e);
}

bool RerankJob::start(std::vector<std::vector<TokenId>> pairs) {
  for (std::vector<TokenId>& tokens : pairs) {
    GenerateRequest req;
    const int32_t num_tokens = int32_t(tokens.size());
    req.prompt = std::move(tokens);
    req.prefill_only = true;
    req.pooling = Pooling::kRank;
    Result<RequestHandle> handle = ctx_.engine->submit(std::move(req));
    if (!handle.ok()) {
      for (Pair& p : pairs_) ctx_.engine->cancel(p.handle.id);
      const ApiError e = api_error_from_status(handle.status());
      pairs_.clear();
      log_line(e.http_status, 0, "error: " + e.message);
      exchange_->respond(e.to_response());
      return false;
    }
    Pair p;
    p.handle = *handle;
    p.num_prompt_tokens = num_tokens;
    pairs_.push_back(std::move(p));
  }
  std::weak_ptr<RerankJob> weak = weak_from_this();
  exchange_->set_on_close([weak] {
    if (auto job = weak.lock()) job->client_gone();
  });
  // The listener runs on the engine's thread: it only posts the work onto this job's strand.
  for (Pair& p : pairs_) {
    p.handle.stream->set_listener([weak] {
      if (auto job = weak.lock()) job->exchange_->post([job] { job->drain(); });
    });
  }
  return true;
}

void RerankJob::drain() {
  try {
    for (Pair& p : pairs_) {
      while (!p.done) {
        std::optional<RequestOutput> out = p.handle.stream->try_next();
        if (!out) break;
        if (!out->finished) continue;
        p.done = true;
        ++num_done_;
        p.finish_reason = out->finish_reason;
        p.scores = std::move(out->embedding);
      }
    }
    if (!completed_ && num_done_ == int32_t(pairs_.size())) complete();
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void RerankJob::fail(const std::string& what) {
  if (completed_) return;
  ctx_.log->message(fmt::format("internal error in {}: {}", id_, what));
  cancel_running();
  for (Pair& p : pairs_) {
    if (!p.done) ++num_done_;
    p.done = true;
    p.finish_reason = FinishReason::kAbort;
  }
  error_ = ApiError{500, "internal server error; the server logged the cause", "server_error", {}, {}};
  complete();
}

void RerankJob::cancel_running() {
  for (Pair& p : pairs_)
    if (!p.done) ctx_.engine->cancel(p.handle.id);
}

void RerankJob::client_gone() {
  if (completed_) return;
  client_gone_ = true;
  cancel_running();
}

void RerankJob::expire(ApiError why) {
  if (completed_ || error_) return;
  error_ = std::move(why);
  cancel_running();
}

void RerankJob::complete() {
  completed_ = true;
  for (Pair& p : pairs_) p.handle.stream->set_listener(nullptr);
  int64_t prompt_tokens = 0;
  bool cut_short = false;
  for (const Pair& p : pairs_) {
    prompt_tokens += p.num_prompt_tokens;
    cut_short |= p.finish_reason != FinishReason::kStop || p.scores.empty();
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
    exchange_->respond(error_->to_response());
  } else {
    std::vector<RerankScore> scores;
    scores.reserve(pairs_.size());
    for (size_t i = 0; i < pairs_.size(); ++i)
      scores.push_back({int32_t(i), pairs_[i].scores[0], pairs_[i].num_prompt_tokens});
    HttpResponse resp;
    resp.body = rerank_response(params_, std::move(scores), ctx_.model_name);
    exchange_->respond(std::move(resp));
  }
  log_line(status, prompt_tokens, finish);
  if (on_done_) std::exchange(on_done_, nullptr)();
}

}  // namespace pagoda::server
