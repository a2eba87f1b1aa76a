// InProcessServer: the real HttpServer and ApiServer over an Engine on the bundled model, in this process on a
// free loopback port, so the sanitizer builds can fuzz the whole request path (a child process would escape
// them). Talk to it with tests/support/raw_http_client.h.
#pragma once

#include <cstdio>
#include <memory>
#include <thread>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"
#include "server/api_server.h"
#include "server/http_server.h"

namespace pagoda::server {

class InProcessServer {
 public:
  // `prompt_logits`: the engine computes prompt logprobs, as pagoda serve's does unless it says why not.
  explicit InProcessServer(HttpServerOptions http = {}, ApiServerOptions api = {}, bool prompt_logits = true) {
    auto loaded = load_model("", kernels::best_kernels());
    if (!loaded.ok()) return;
    loaded_ = std::make_unique<LoadedModel>(std::move(loaded).value());
    EngineConfig c;
    c.max_seq_len = 256;
    c.scheduler.max_num_seqs = 16;
    c.scheduler.max_batched_tokens = 256;
    c.kv.num_blocks = 512;
    c.kv.block_size = 16;
    c.max_queue = 256;
    c.num_threads = 1;
    c.pooling = true;
    c.prompt_logits = prompt_logits;
    auto engine = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
    if (!engine.ok()) return;
    engine_ = std::move(engine).value();
    null_ = std::fopen("/dev/null", "w");
    log_ = std::make_unique<RequestLog>(null_, LogFormat::kText);
    api.max_seq_len = c.max_seq_len;
    api.max_model_len = c.max_seq_len;
    api_ = std::make_unique<ApiServer>(*engine_, *loaded_->tokenizer, *log_, ids_, api);
    http.port = 0;
    http.error_response = [a = api_.get()](int status, std::string message, std::string_view path) {
      return a->http_layer_error(status, std::move(message), path);
    };
    http.log_internal_error = [](const std::string&) {};
    auto created = HttpServer::create(http, [a = api_.get()](std::shared_ptr<HttpExchange> ex) { a->handle(ex); });
    if (!created.ok()) return;
    http_ = std::move(created).value();
    http_->every(std::chrono::milliseconds(10), [a = api_.get()] { a->tick(); });
    thread_ = std::thread([h = http_.get()] { h->run(); });
  }
  ~InProcessServer() {
    if (http_) {
      http_->stop();
      thread_.join();
    }
    engine_.reset();  // the engine first (no more events), then the jobs, then the sockets
    api_.reset();
    http_.reset();
    if (null_ != nullptr) std::fclose(null_);
  }
  bool started() const { return http_ != nullptr; }
  int port() const { return http_->port(); }
  const Engine& engine() const { return *engine_; }
  Engine& engine() { return *engine_; }
  const Tokenizer& tokenizer() const { return *loaded_->tokenizer; }

 private:
  std::unique_ptr<LoadedModel> loaded_;
  std::unique_ptr<Engine> engine_;
  std::FILE* null_ = nullptr;
  std::unique_ptr<RequestLog> log_;
  IdGenerator ids_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
};

}  // namespace pagoda::server
