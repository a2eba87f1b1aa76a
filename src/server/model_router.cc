// ModelRouter: which model a request goes to, and the answers that span the models.
#include "server/model_router.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "metrics/prometheus_text.h"
#include "server/json_text.h"
#include "server/ollama_protocol.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

// Bodies at least this large have their model read on a router worker rather than the I/O thread.
constexpr size_t kInlineBodyBytes = size_t(64) << 10;
constexpr int kNumWorkers = 2;

// Collects the top-level "model", "name" and "keep_alive" scalars of a JSON object; stops at the first error or
// past the JSON depth limit. Nothing else of the body is kept.
class ModelFieldsSax : public json::json_sax_t {
 public:
  json model, name, keep_alive;
  bool is_object = false;

  bool null() override { return scalar(json()); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(json(v)); }
  bool string(string_t& v) override { return scalar(json(v)); }
  bool binary(binary_t&) override { return scalar(json()); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) is_object = true;
    target_ = nullptr;
    return ++depth_ <= kMaxUntrustedJsonDepth;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) target_ = k == "model" ? &model : k == "name" ? &name : k == "keep_alive" ? &keep_alive : nullptr;
    return true;
  }
  bool end_object() override {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    target_ = nullptr;
    return ++depth_ <= kMaxUntrustedJsonDepth;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool scalar(json v) {
    if (depth_ == 1 && target_ != nullptr) *target_ = std::move(v);
    target_ = nullptr;
    return true;
  }
  int depth_ = 0;
  json* target_ = nullptr;
};

ApiError unavailable(std::string message) {
  ApiError e;
  e.http_status = 503;
  e.type = "service_unavailable_error";
  e.message = std::move(message);
  return e;
}

bool is_ollama_path(std::string_view path) { return path.starts_with("/api/"); }

}  // namespace

RequestModelFields read_request_model_fields(std::string_view body) {
  ModelFieldsSax sax;
  const bool parsed = json::sax_parse(body.begin(), body.end(), &sax, nlohmann::detail::input_format_t::json, false);
  RequestModelFields out;
  if (!parsed || !sax.is_object) return out;
  if (sax.model.is_string())
    out.model = sax.model.get<std::string>();
  else if (sax.model.is_null() && sax.name.is_string())
    out.model = sax.name.get<std::string>();
  if (!sax.keep_alive.is_null()) out.keep_alive = parse_ollama_keep_alive(sax.keep_alive);
  return out;
}

ModelRouter::ModelRouter(ModelSet& models, RequestLog& log, std::optional<std::string> api_key)
    : models_(models),
      log_(log),
      api_key_(std::move(api_key)),
      workers_(std::make_unique<RequestWorkers>(kNumWorkers, 1024)) {
  created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  started_at_ = ollama_timestamp();
}

ModelRouter::~ModelRouter() { workers_.reset(); }

void ModelRouter::reply(HttpExchange& ex, HttpResponse response, const std::string& finish) {
  reply_and_log(log_, ex, std::move(response), finish);
}

void ModelRouter::reply_error(HttpExchange& ex, const ApiError& error) {
  reply(ex, error_response_for(ex.request().path, error), "error: " + error.message);
}

void ModelRouter::record_refused(const RefusedRequest& refused) {
  if (std::shared_ptr<ServedModel> m = models_.loaded_model(0); m && m->api) return m->api->record_refused(refused);
  RequestLogEntry e;
  e.method = refused.method.empty() ? "-" : refused.method;
  e.path = refused.target.empty() ? "-" : refused.target.substr(0, refused.target.find('?'));
  e.status = refused.status;
  e.finish = "error: " + refused.message;
  log_.write(e);
}

void ModelRouter::handle(std::shared_ptr<HttpExchange> exchange) {
  try {
    route(exchange);
  } catch (const std::exception& e) {
    log_.message(
        fmt::format("internal error on {} {}: {}", exchange->request().method, exchange->request().path, e.what()));
    ApiError err;
    err.http_status = 500;
    err.type = "server_error";
    err.message = "internal server error; the server logged the cause";
    reply_error(*exchange, err);
  }
}

void ModelRouter::route(const std::shared_ptr<HttpExchange>& ex) {
  // One model: its ApiServer answers everything, as a server of one model always has.
  if (models_.specs().size() == 1) return dispatch(ex, 0, std::nullopt);
  const HttpRequest& req = ex->request();
  const std::string& path = req.path;
  const bool is_get = req.method == "GET" || req.method == "HEAD";
  auto method_not_allowed = [&](const char* allowed) {
    reply_error(*ex, server::method_not_allowed(path, req.method, allowed));
  };
  if (path == "/health") {
    if (!is_get) return method_not_allowed("GET");
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return reply_error(*ex, unavailable("the server is shutting down"));
    return reply(*ex, HttpResponse{200, "application/json", R"({"status":"ok"})", {}});
  }
  if (path == "/metrics") {
    if (!is_get) return method_not_allowed("GET");
    return reply(*ex, metrics_response());
  }
  // The other routes that need no model (the chat page, /version, the 404s) are the default model's to answer.
  if (!is_api_route(path)) return dispatch(ex, 0, std::nullopt);
  if (std::optional<ApiError> e = ApiServer::authorization_error(req, api_key_)) return reply_error(*ex, *e);
  if (path == "/v1/models" || path == "/api/tags" || path == "/api/ps") {
    if (!is_get) return method_not_allowed("GET");
    return reply(*ex, path == "/v1/models"  ? models_response()
                      : path == "/api/tags" ? ollama_tags_response()
                                            : ollama_ps_response());
  }
  if (path.starts_with("/v1/models/")) {
    if (!is_get) return method_not_allowed("GET");
    const std::string name = path.substr(std::string("/v1/models/").size());
    const std::optional<size_t> index = models_.find(name, false);
    if (!index) return reply_error(*ex, unknown_model(path, name));
    HttpResponse r;
    r.body = json_text(model_entry(*index));  // listed, not loaded
    return reply(*ex, std::move(r));
  }
  if (req.body.empty()) return dispatch(ex, 0, std::nullopt);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++num_pending_;
  }
  if (req.body.size() < kInlineBodyBytes) return dispatch_by_body(ex);
  if (!workers_->try_post([this, ex] { dispatch_by_body(ex); })) {
    done_pending();
    reply_error(*ex, unavailable("the server is busy: too many requests wait to be routed; retry later"));
  }
}

void ModelRouter::dispatch_by_body(const std::shared_ptr<HttpExchange>& ex) {
  // num_pending_ counted by the caller; ended here or once the model is had.
  const std::string& path = ex->request().path;
  const RequestModelFields fields = read_request_model_fields(ex->request().body);
  std::optional<size_t> index = 0;
  if (fields.model && !fields.model->empty()) index = models_.find(*fields.model, is_ollama_path(path));
  if (!index) {
    done_pending();
    return reply_error(*ex, unknown_model(path, *fields.model));
  }
  // Ollama's keep_alive sets the model's; the other protocols have none.
  const bool ollama_generation =
      path == "/api/chat" || path == "/api/generate" || path == "/api/embed" || path == "/api/embeddings";
  dispatch(ex, *index, ollama_generation ? fields.keep_alive : std::nullopt);
  done_pending();
}

void ModelRouter::dispatch(const std::shared_ptr<HttpExchange>& ex, size_t index,
                           std::optional<std::chrono::milliseconds> keep_alive) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++num_pending_;
  }
  models_.acquire(index, keep_alive, [this, ex, index](Result<std::shared_ptr<ModelSet::Lease>> lease) {
    if (lease.ok()) {
      // The ApiServer counts the request as its own before handle returns, so the lease may end with it.
      (*lease)->model().api->handle(ex);
    } else {
      ApiError e;
      if (lease.status().code() == StatusCode::kUnavailable) {
        e = unavailable(lease.error());
      } else {
        log_.message(fmt::format("loading model '{}' failed: {}", models_.specs()[index].name, lease.error()));
        e.http_status = 500;
        e.type = "server_error";
        e.message =
            fmt::format("the model '{}' failed to load; the server logged the cause", models_.specs()[index].name);
      }
      reply_error(*ex, e);
    }
    done_pending();
  });
}

void ModelRouter::done_pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  --num_pending_;
}

ApiError ModelRouter::unknown_model(std::string_view path, std::string_view name) const {
  if (is_ollama_path(path)) return ollama_model_not_found(name);
  std::string served;
  for (const ModelSpec& s : models_.specs()) served += (served.empty() ? "'" : ", '") + s.name + "'";
  ApiError e;
  e.http_status = 404;
  e.type = "not_found_error";
  e.code = "model_not_found";
  e.message = fmt::format("The model '{}' does not exist; this server serves {}", name, served);
  return e;
}

nlohmann::json ModelRouter::model_entry(size_t index) const {
  const ModelSpec& spec = models_.specs()[index];
  json model = {
      {"id", spec.name}, {"object", "model"}, {"created", created_}, {"owned_by", "pagoda"}, {"root", spec.name}};
  // llama-server's router gives each model's state the same way.
  if (std::shared_ptr<ServedModel> m = models_.loaded_model(index); m && m->api) {
    model["max_model_len"] = m->api->options().max_model_len;
    model["status"] = {{"value", "loaded"}};
  } else {
    model["status"] = {{"value", "unloaded"}};
  }
  return model;
}

HttpResponse ModelRouter::models_response() const {
  json data = json::array();
  for (size_t i = 0; i < models_.specs().size(); ++i) data.push_back(model_entry(i));
  HttpResponse r;
  r.body = json_text({{"object", "list"}, {"data", std::move(data)}});
  return r;
}

HttpResponse ModelRouter::metrics_response() const {
  std::vector<std::string> texts;
  const std::vector<ModelSet::Loaded> loaded = models_.loaded();
  metrics::PrometheusText own;
  own.gauge("pagoda:models_loaded", "Models loaded now (of those the server serves).", double(loaded.size()));
  texts.push_back(own.text());
  for (const ModelSet::Loaded& l : loaded)
    if (l.model->api) texts.push_back(l.model->api->render_metrics());
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics::merge_prometheus_texts(texts);
  return r;
}

HttpResponse ModelRouter::ollama_tags_response() const {
  std::vector<OllamaModelFacts> facts;
  const std::vector<ModelSpec>& specs = models_.specs();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (std::shared_ptr<ServedModel> m = models_.loaded_model(i); m && m->api) {
      facts.push_back(m->api->ollama_facts());
      continue;
    }
    // Not loaded: what is known without reading the file.
    OllamaModelFacts f;
    f.name = specs[i].name;
    f.size_bytes = specs[i].file_bytes;
    f.started_at = started_at_;
    facts.push_back(std::move(f));
  }
  HttpResponse r;
  r.body = ollama_tags_json(facts);
  return r;
}

HttpResponse ModelRouter::ollama_ps_response() const {
  std::vector<OllamaLoadedModel> loaded;
  for (const ModelSet::Loaded& l : models_.loaded())
    if (l.model->api) loaded.push_back({l.model->api->ollama_facts(), l.expires_at});
  HttpResponse r;
  r.body = ollama_ps_json(loaded);
  return r;
}

void ModelRouter::tick() {
  const std::vector<ModelSet::Loaded> loaded = models_.loaded();
  bool draining = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining = draining_;
    // A model whose load ended after the shutdown began drains too.
    if (draining)
      for (const ModelSet::Loaded& l : loaded)
        if (l.model->api && drained_.insert(l.model->api.get()).second) l.model->api->begin_shutdown();
  }
  for (const ModelSet::Loaded& l : loaded)
    if (l.model->api) l.model->api->tick();
  if (!draining) models_.expire();
}

void ModelRouter::begin_shutdown() {
  models_.stop_loading();
  std::lock_guard<std::mutex> lock(mutex_);
  draining_ = true;
  for (const ModelSet::Loaded& l : models_.loaded())
    if (l.model->api) {
      drained_.insert(l.model->api.get());
      l.model->api->begin_shutdown();  // a second signal: each ends its requests at once
    }
}

bool ModelRouter::shutdown_complete() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!draining_ || num_pending_ > 0) return false;
  }
  if (models_.is_loading()) return false;
  for (const ModelSet::Loaded& l : models_.loaded())
    if (l.model->api && !l.model->api->idle()) return false;
  return true;
}

}  // namespace pagoda::server
