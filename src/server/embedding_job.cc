// EmbeddingJob: from pooled engine outputs to an OpenAI embeddings response.
#include "server/embedding_job.h"

#include "server/ollama_protocol.h"

#include <fmt/format.h>

#include "server/matryoshka_dimensions.h"

namespace pagoda::server {

EmbeddingJob::EmbeddingJob(JobContext ctx, std::shared_ptr<HttpExchange> exchange, EmbeddingParams params,
                           std::function<void()> on_done)
    : ctx_(std::move(ctx)), exchange_(std::move(exchange)), params_(std::move(params)), on_done_(std::move(on_done)) {
  id_ = ctx_.ids->next("embd-");  // the log line's id
  start_us_ = ctx_.engine->now_us();
}

bool EmbeddingJob::start(std::vector<std::vector<TokenId>> inputs, Pooling pooling) {
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
      ctx_.metrics->record_http_request(e.http_status);
      RequestLogEntry entry;
      entry.id = id_;
      entry.path = exchange_->request().path;
      entry.status = e.http_status;
      entry.e2e_ms = double(ctx_.engine->now_us() - start_us_) / 1e3;
      entry.finish = "error: " + e.message;
      ctx_.log->write(entry);
      exchange_->respond(error_response(e));
      return false;
    }
    Input in;
    in.handle = *handle;
    in.num_prompt_tokens = num_tokens;
    inputs_.push_back(std::move(in));
  }
  std::weak_ptr<EmbeddingJob> weak = weak_from_this();
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

void EmbeddingJob::drain() {
  try {
    for (Input& in : inputs_) {
      while (!in.done) {
        std::optional<RequestOutput> out = in.handle.stream->try_next();
        if (!out) break;
        if (!out->finished) continue;
        in.done = true;
        ++num_done_;
        in.finish_reason = out->finish_reason;
        in.embedding = std::move(out->embedding);
      }
    }
    if (!completed_ && num_done_ == int32_t(inputs_.size())) complete();
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

void EmbeddingJob::fail(const std::string& what) {
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

void EmbeddingJob::cancel_running() {
  for (Input& in : inputs_)
    if (!in.done) ctx_.engine->cancel(in.handle.id);
}

void EmbeddingJob::client_gone() {
  if (completed_) return;
  client_gone_ = true;
  cancel_running();
}

void EmbeddingJob::expire(ApiError why) {
  if (completed_ || error_) return;
  error_ = std::move(why);
  cancel_running();
}

void EmbeddingJob::complete() {
  completed_ = true;
  for (Input& in : inputs_) in.handle.stream->set_listener(nullptr);
  int64_t prompt_tokens = 0;
  bool cut_short = false;
  for (const Input& in : inputs_) {
    prompt_tokens += in.num_prompt_tokens;
    cut_short |= in.finish_reason != FinishReason::kStop || in.embedding.empty();
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
    exchange_->respond(error_response(*error_));
  } else {
    std::vector<std::vector<float>> vectors;
    vectors.reserve(inputs_.size());
    for (Input& in : inputs_) {
      // Truncated first, then normalized (vLLM, sentence-transformers): the shorter vector has norm 1 too.
      if (params_.dimensions) truncate_embedding(in.embedding, *params_.dimensions);
      if (params_.normalize) l2_normalize(in.embedding);
      vectors.push_back(std::move(in.embedding));
    }
    HttpResponse resp;
    if (params_.api == EmbeddingParams::Api::kOpenAi)
      resp.body = embeddings_response(vectors, params_.encoding, ctx_.model_name, prompt_tokens);
    else
      resp.body = ollama_embed_json(vectors, params_.ollama_model, prompt_tokens,
                                    (ctx_.engine->now_us() - start_us_) * 1000,
                                    params_.api == EmbeddingParams::Api::kOllamaLegacy);
    exchange_->respond(std::move(resp));
  }
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
  if (on_done_) std::exchange(on_done_, nullptr)();
}

}  // namespace pagoda::server
