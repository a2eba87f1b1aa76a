// ModelRouter: the HTTP handler of a server over a ModelSet. Sends each request to the ApiServer of the model its
// body's `model` names (the first model when it names none, and every request without a body), loading the model
// first where needed; answers itself what spans the models (/health, /metrics, /v1/models, Ollama's /api/tags and
// /api/ps) and a name it does not serve (404 model_not_found in the client's protocol); passes Ollama's
// keep_alive to the set. With one model every request goes to that model's ApiServer unread, as a one-model server
// always has. Borrows the set and the log; owns the threads that read large bodies' model names.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json_fwd.hpp>

#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/model_set.h"
#include "server/request_log.h"
#include "server/request_workers.h"

namespace pagoda::server {

// What a request body says of its model: the top-level "model" (or Ollama's older "name") and "keep_alive", read
// without building the body's tree; a body that is no JSON object gives nothing.
struct RequestModelFields {
  std::optional<std::string> model;
  std::optional<std::chrono::milliseconds> keep_alive;  // present and valid; an invalid one is the ApiServer's 400
};
RequestModelFields read_request_model_fields(std::string_view body);

class ModelRouter {
 public:
  ModelRouter(ModelSet& models, RequestLog& log, std::optional<std::string> api_key);
  ~ModelRouter();

  void handle(std::shared_ptr<HttpExchange> exchange);
  void record_refused(const RefusedRequest& refused);
  // Periodic: each loaded model's deadlines and drain, and the set's keep-alive expiry.
  void tick();
  // SIGTERM / SIGINT: no more loads; each loaded model drains (a second call ends its requests at once).
  void begin_shutdown();
  bool shutdown_complete() const;

 private:
  void route(const std::shared_ptr<HttpExchange>& ex);
  // Reads the body's model on this thread (or a worker, for a large body), then hands the request on.
  void dispatch_by_body(const std::shared_ptr<HttpExchange>& ex);
  void dispatch(const std::shared_ptr<HttpExchange>& ex, size_t index,
                std::optional<std::chrono::milliseconds> keep_alive);
  void reply(HttpExchange& ex, HttpResponse response, const std::string& finish = "");
  void reply_error(HttpExchange& ex, const ApiError& error);
  nlohmann::json model_entry(size_t index) const;  // a model as /v1/models lists it
  HttpResponse models_response() const;            // /v1/models
  HttpResponse metrics_response() const;           // every loaded model's metrics, merged
  HttpResponse ollama_tags_response() const;
  HttpResponse ollama_ps_response() const;
  ApiError unknown_model(std::string_view path, std::string_view name) const;
  void done_pending();

  ModelSet& models_;
  RequestLog& log_;
  const std::optional<std::string> api_key_;
  int64_t created_ = 0;
  std::string started_at_;

  mutable std::mutex mutex_;
  bool draining_ = false;
  int32_t num_pending_ = 0;  // requests the router holds: their body being read or their model being loaded
  std::unordered_set<const ApiServer*> drained_;  // loaded models told to drain
  // Last: destroyed first, so no worker runs while the members above go.
  std::unique_ptr<RequestWorkers> workers_;
};

}  // namespace pagoda::server
