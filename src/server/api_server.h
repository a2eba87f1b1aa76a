// ApiServer: the OpenAI-compatible API over one Engine: routes each HttpExchange (/v1/completions,
// /v1/chat/completions, /v1/models, /health, /metrics, /tokenize, /detokenize, the chat page at /), checks the
// API key, turns requests into CompletionJobs, enforces deadlines, and drains on shutdown. Borrows the engine
// and tokenizer; owns the jobs in flight, the metrics and the request log.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/engine.h"
#include "server/completion_job.h"
#include "server/http_exchange.h"
#include "server/request_log.h"
#include "server/serving_metrics.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

struct ApiServerOptions {
  std::string model_name = "stories260K";
  std::optional<std::string> api_key;  // requests to /v1/* and /tokenize need "Authorization: Bearer KEY"
  ChatTemplate chat_template{ChatFormat::kPlain};
  std::string bos_text;  // the BOS token's text, which a Jinja template may write (the tokenizer adds BOS itself)
  int32_t max_seq_len = 0;
  int64_t max_model_len = 0;                        // reported by /v1/models
  std::chrono::milliseconds request_timeout{0};     // 0 = none; queue time included
  std::chrono::milliseconds drain_timeout{30'000};  // SIGTERM: how long running requests may finish
  bool add_bos = true;
  CacheConfigInfo cache;
};

class ApiServer {
 public:
  ApiServer(Engine& engine, const Tokenizer& tokenizer, RequestLog& log, ApiServerOptions options);
  ~ApiServer();

  void handle(std::shared_ptr<HttpExchange> exchange);
  // Periodic: deadlines of running requests, progress of a drain. Any thread.
  void tick();
  // SIGTERM / SIGINT: /health turns 503, new requests get 503, running ones get drain_timeout to finish.
  // A second call ends them at once.
  void begin_shutdown();
  // True once a shutdown was asked for and every request has ended.
  bool shutdown_complete() const;
  int32_t num_active_jobs() const;

 private:
  void route(std::shared_ptr<HttpExchange>& ex);
  void reply(HttpExchange& ex, HttpResponse response);
  void reply_error(HttpExchange& ex, const ApiError& error);
  void handle_completion(std::shared_ptr<HttpExchange>& ex, bool chat);
  void handle_tokenize(HttpExchange& ex);
  void handle_detokenize(HttpExchange& ex);
  HttpResponse models_response() const;
  // The chat's prompt tokens through the template; a template error (raise_exception) is a 400.
  std::variant<std::vector<TokenId>, ApiError> chat_prompt_tokens(const CompletionParams& params) const;
  void expire_all(const ApiError& why);

  Engine& engine_;
  const Tokenizer& tokenizer_;
  RequestLog& log_;
  ApiServerOptions options_;
  ServingMetrics metrics_;
  int64_t created_ = 0;

  mutable std::mutex mutex_;
  uint64_t next_job_id_ = 1;
  struct ActiveJob {
    std::shared_ptr<CompletionJob> job;
    int64_t deadline_us = -1;  // engine clock; -1 = none
    bool expired = false;
  };
  std::unordered_map<uint64_t, ActiveJob> jobs_;
  bool draining_ = false;
  int64_t drain_deadline_us_ = 0;
  bool drain_cut_ = false;  // the drain timeout passed and the remaining requests were ended
};

}  // namespace pagoda::server
