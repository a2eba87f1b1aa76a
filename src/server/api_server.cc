// ApiServer: routing, authentication, prompt building and the lifecycle of the jobs in flight.
#include "server/api_server.h"

#include <fmt/format.h>

#include <malloc.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/anthropic_protocol.h"
#include "server/anthropic_writer.h"
#include "server/chat_page.h"
#include "server/embedding_job.h"
#include "server/embeddings_protocol.h"
#include "server/rerank_job.h"
#include "server/json_text.h"
#include "server/matryoshka_dimensions.h"
#include "server/llama_protocol.h"
#include "server/llama_writer.h"
#include "server/ollama_protocol.h"
#include "server/ollama_writer.h"
#include "server/openai_writer.h"
#include "server/responses_protocol.h"
#include "server/responses_writer.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = json_text(body);
  return r;
}

ApiError not_found(std::string message, std::optional<std::string> code = std::nullopt) {
  ApiError e;
  e.http_status = 404;
  e.type = "not_found_error";
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

ApiError unavailable(std::string message) {
  ApiError e;
  e.http_status = 503;
  e.type = "service_unavailable_error";
  e.message = std::move(message);
  return e;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

constexpr size_t kGrammarCacheCapacity = 64;  // compiled grammars kept (distinct schemas in use at once)

// Ollama's endpoints this server serves; the others (pull, push, create, copy, delete, blobs) manage a model
// store it does not have.
bool is_ollama_endpoint(std::string_view path) {
  return path == "/api/chat" || path == "/api/generate" || path == "/api/embed" || path == "/api/embeddings" ||
         path == "/api/tags" || path == "/api/show" || path == "/api/ps" || path == "/api/version";
}

// llama-server's rerank routes (Jina's, Cohere's and TEI's shapes on each).
bool is_rerank_route(std::string_view path) {
  return path == "/v1/rerank" || path == "/rerank" || path == "/v1/reranking" || path == "/reranking";
}

}  // namespace

HttpResponse error_response_for(std::string_view path, const ApiError& error) {
  if (path.starts_with("/v1/messages")) return anthropic_error_response(error);
  if (path.starts_with("/api/")) return ollama_error_response(error);
  return error.to_response();
}

bool is_api_route(std::string_view path) {
  return path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/models" ||
         path.starts_with("/v1/models/") || path == "/v1/embeddings" || path == "/v1/messages" ||
         path == "/v1/responses" || path == "/tokenize" || path == "/detokenize" ||
         path == "/v1/messages/count_tokens" || path == "/completion" || path == "/completions" || path == "/props" ||
         path == "/slots" || path == "/infill" || path == "/apply-template" || path == "/embedding" ||
         path == "/embeddings" || is_rerank_route(path) || is_ollama_endpoint(path);
}

ApiServer::ApiServer(Engine& engine, const Tokenizer& tokenizer, RequestLog& log, IdGenerator& ids,
                     ApiServerOptions options)
    : engine_(engine),
      tokenizer_(tokenizer),
      log_(log),
      ids_(ids),
      options_(std::move(options)),
      metrics_(options_.model_name),
      grammar_compiler_(grammar::TokenVocabulary::from_tokenizer(tokenizer), kGrammarCacheCapacity) {
  created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  started_at_ = ollama_timestamp();
  start_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
  workers_ = std::make_unique<RequestWorkers>(options_.num_workers, options_.max_queued_requests);
  compile_workers_ = std::make_unique<RequestWorkers>(1, kMaxQueuedCompiles);
}

ApiServer::~ApiServer() {
  stop_preparing_ = true;  // renders and compiles in progress give up instead of holding the destructor
  workers_.reset();
  compile_workers_.reset();
}

JobContext ApiServer::job_context() {
  return JobContext{
      &engine_,      &tokenizer_,         &metrics_,
      &log_,         options_.model_name, options_.tool_call_format.value_or(options_.chat_template.tool_call_format()),
      workers_.get(), &ids_};
}

int64_t ApiServer::now_us() const {
  return (std::chrono::steady_clock::now().time_since_epoch().count() - start_ns_) / 1000;
}

void ApiServer::reply(HttpExchange& ex, HttpResponse response, const std::string& finish) {
  metrics_.record_http_request(response.status);
  reply_and_log(log_, ex, std::move(response), finish);
}

void ApiServer::reply_error(HttpExchange& ex, const ApiError& error) {
  reply(ex, error_response_for(ex.request().path, error), "error: " + error.message);
}

HttpResponse ApiServer::http_layer_error(int status, std::string message, std::string_view path) {
  ApiError e = invalid_request(std::move(message));
  e.http_status = status;
  if (status == 500) e.type = "server_error";
  if (status > 500) e.type = "service_unavailable_error";
  return error_response_for(path, e);
}

void ApiServer::record_refused(const RefusedRequest& refused) {
  metrics_.record_http_request(refused.status);
  RequestLogEntry e;
  e.method = refused.method.empty() ? "-" : refused.method;
  e.path = refused.target.empty() ? "-" : refused.target.substr(0, refused.target.find('?'));
  e.status = refused.status;
  e.finish = "error: " + refused.message;
  log_.write(e);
}

void ApiServer::reply_internal_error(HttpExchange& ex, const std::string& what) {
  log_.message(fmt::format("internal error on {} {}: {}", ex.request().method, ex.request().path, what));
  ApiError e;
  e.http_status = 500;
  e.type = "server_error";
  e.message = "internal server error; the server logged the cause";
  reply_error(ex, e);
}

void ApiServer::handle(std::shared_ptr<HttpExchange> exchange) {
  try {
    route(exchange);
  } catch (const std::exception& e) {
    reply_internal_error(*exchange, e.what());
  }
}

std::optional<ApiError> ApiServer::deadline_error(int64_t received_us) const {
  if (options_.request_timeout.count() <= 0 ||
      now_us() - received_us < int64_t(options_.request_timeout.count()) * 1000)
    return std::nullopt;
  return timeout_error();
}

ApiError ApiServer::timeout_error() const {
  ApiError e;
  e.http_status = 408;
  e.type = "timeout_error";
  e.code = "request_timeout";
  e.message = fmt::format("the request took longer than the server's --request-timeout of {:.3g} s",
                          double(options_.request_timeout.count()) / 1e3);
  return e;
}

void ApiServer::run_on_worker(std::shared_ptr<HttpExchange> ex, std::function<void(int64_t)> work) {
  const int64_t received_us = now_us();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return reply_error(*ex, unavailable("the server is shutting down; retry on another replica"));
    ++num_preparing_;
  }
  auto task = [this, ex, work = std::move(work), received_us] {
    try {
      bool draining = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        draining = draining_;
      }
      if (draining) {
        reply_error(*ex, unavailable("the server is shutting down; retry on another replica"));
      } else if (std::optional<ApiError> late = deadline_error(received_us)) {
        reply_error(*ex, *late);
      } else {
        work(received_us);
      }
    } catch (const std::exception& e) {
      reply_internal_error(*ex, e.what());
    }
    // A large body's JSON tree and tokens were freed: give their pages back rather than keep the peak resident.
    if (ex->request().body.size() >= (size_t(1) << 20)) malloc_trim(0);
    std::lock_guard<std::mutex> lock(mutex_);
    --num_preparing_;
  };
  if (!workers_->try_post(std::move(task))) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --num_preparing_;
    }
    reply_error(*ex, unavailable(fmt::format("the server is busy: {} requests wait to be prepared; retry later",
                                             options_.max_queued_requests)));
  }
}

std::optional<ApiError> ApiServer::authorization_error(const HttpRequest& req,
                                                       const std::optional<std::string>& api_key) {
  if (!api_key || !is_api_route(req.path)) return std::nullopt;
  const std::string& auth = req.header("authorization");
  const std::string expected = "Bearer " + *api_key;
  // Anthropic's clients send the key as x-api-key.
  const std::string& x_api_key = req.header("x-api-key");
  if (constant_time_equal(auth, expected) || (!x_api_key.empty() && constant_time_equal(x_api_key, *api_key)))
    return std::nullopt;
  ApiError e;
  e.http_status = 401;
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  e.message = auth.empty() && x_api_key.empty()
                  ? "missing API key: send the header 'Authorization: Bearer KEY' (or 'x-api-key: KEY')"
                  : "invalid API key";
  return e;
}

bool ApiServer::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.empty() && num_preparing_ == 0;
}

std::string ApiServer::render_metrics() const {
  int32_t preparing = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    preparing = num_preparing_;
  }
  return metrics_.render(engine_.stats(), options_.cache, preparing);
}

void ApiServer::route(std::shared_ptr<HttpExchange>& ex) {
  const HttpRequest& req = ex->request();
  const std::string& path = req.path;
  const bool is_get = req.method == "GET" || req.method == "HEAD";
  const bool is_post = req.method == "POST";
  auto method_not_allowed = [&](const char* allowed) {
    reply_error(*ex, server::method_not_allowed(path, req.method, allowed));
  };

  if (path == "/health") {
    if (!is_get) return method_not_allowed("GET");
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return reply_error(*ex, unavailable("the server is shutting down"));
    return reply(*ex, json_response(200, {{"status", "ok"}}));
  }
  if (path == "/metrics") {
    if (!is_get) return method_not_allowed("GET");
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = render_metrics();
    return reply(*ex, std::move(r));
  }
  if (path == "/" || path == "/index.html") {
    if (!is_get) return method_not_allowed("GET");
    HttpResponse r;
    // Ollama's clients probe / for its plain answer; a browser asks for HTML and gets the chat page.
    if (path == "/" && (req.method == "HEAD" || req.header("accept").find("text/html") == std::string::npos)) {
      r.content_type = "text/plain; charset=utf-8";
      r.body = "Ollama is running";
      return reply(*ex, std::move(r));
    }
    r.content_type = "text/html; charset=utf-8";
    r.body = chat_page_html(options_.model_name);
    return reply(*ex, std::move(r));
  }
  if (path == "/version" || path == "/api/version") {
    if (!is_get) return method_not_allowed("GET");
    return reply(*ex, json_response(200, {{"version", PAGODA_VERSION}}));
  }
  if (path.starts_with("/api/") && !is_ollama_endpoint(path)) {
    ApiError e =
        not_found(fmt::format("{} is not supported: this server serves the models it was started with and "
                              "keeps no model store to pull, push, create, copy or delete",
                              path));
    return reply_error(*ex, e);
  }
  if (!is_api_route(path)) return reply_error(*ex, not_found(fmt::format("no route for {} {}", req.method, path)));
  if (std::optional<ApiError> e = authorization_error(req, options_.api_key)) return reply_error(*ex, *e);

  if (path == "/v1/models") {
    if (!is_get) return method_not_allowed("GET");
    return reply(*ex, models_response());
  }
  if (path.starts_with("/v1/models/")) {
    if (!is_get) return method_not_allowed("GET");
    const std::string name = path.substr(std::string("/v1/models/").size());
    if (name != options_.model_name)
      return reply_error(*ex, not_found(fmt::format("The model '{}' does not exist", name), "model_not_found"));
    return reply(*ex, json_response(200, {{"id", options_.model_name},
                                          {"object", "model"},
                                          {"created", created_},
                                          {"owned_by", "pagoda"},
                                          {"max_model_len", options_.max_model_len}}));
  }
  if ((path == "/api/tags" || path == "/api/ps") && !is_get) return method_not_allowed("GET");
  if (path == "/props" || path == "/slots") {
    if (!is_get) return method_not_allowed("GET");
    HttpResponse r;
    r.body = path == "/props" ? llama_props_json(llama_facts()) : llama_slots_json(llama_facts());
    return reply(*ex, std::move(r));
  }
  if (handle_ollama_info(*ex, path)) return;
  if (!is_post) return method_not_allowed("POST");
  if (path == "/api/chat" || path == "/api/generate") {
    const CompletionApi api = path == "/api/chat" ? CompletionApi::kOllamaChat : CompletionApi::kOllamaGenerate;
    return run_on_worker(ex, [this, ex, api](int64_t received_us) mutable { handle_completion(ex, api, received_us); });
  }
  if (path == "/completion" || path == "/completions" || path == "/infill") {
    const CompletionApi api = path == "/infill" ? CompletionApi::kLlamaInfill : CompletionApi::kLlamaCompletion;
    return run_on_worker(ex, [this, ex, api](int64_t received_us) mutable { handle_completion(ex, api, received_us); });
  }
  if (path == "/apply-template")
    return run_on_worker(ex, [this, ex](int64_t received_us) { handle_apply_template(*ex, received_us); });
  if (path == "/v1/messages/count_tokens")
    return run_on_worker(ex, [this, ex](int64_t received_us) { handle_count_tokens(*ex, received_us); });
  if (path == "/api/embed" || path == "/api/embeddings" || path == "/embedding" || path == "/embeddings") {
    const EmbeddingParams::Api api = path == "/api/embed"        ? EmbeddingParams::Api::kOllama
                                     : path == "/api/embeddings" ? EmbeddingParams::Api::kOllamaLegacy
                                                                 : EmbeddingParams::Api::kLlama;
    return run_on_worker(ex, [this, ex, api](int64_t received_us) mutable { handle_embeddings(ex, received_us, api); });
  }
  if (path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/messages" ||
      path == "/v1/responses") {
    const CompletionApi api = path == "/v1/completions"        ? CompletionApi::kCompletions
                              : path == "/v1/chat/completions" ? CompletionApi::kChat
                              : path == "/v1/responses"        ? CompletionApi::kResponses
                                                               : CompletionApi::kAnthropicMessages;
    return run_on_worker(ex, [this, ex, api](int64_t received_us) mutable { handle_completion(ex, api, received_us); });
  }
  if (path == "/v1/embeddings")
    return run_on_worker(ex, [this, ex](int64_t received_us) mutable {
      handle_embeddings(ex, received_us, EmbeddingParams::Api::kOpenAi);
    });
  if (is_rerank_route(path))
    return run_on_worker(ex, [this, ex](int64_t received_us) mutable { handle_rerank(ex, received_us); });
  if (path == "/tokenize")
    return run_on_worker(ex, [this, ex](int64_t received_us) { handle_tokenize(*ex, received_us); });
  return run_on_worker(ex, [this, ex](int64_t) { handle_detokenize(*ex); });
}

HttpResponse ApiServer::models_response() const {
  json model = {{"id", options_.model_name}, {"object", "model"},           {"created", created_},
                {"owned_by", "pagoda"},      {"root", options_.model_name}, {"max_model_len", options_.max_model_len}};
  return json_response(200, {{"object", "list"}, {"data", json::array({model})}});
}

RequestLimits ApiServer::request_limits() const {
  RequestLimits l;
  l.vocab_size = tokenizer_.vocab_size();
  l.max_seq_len = options_.max_seq_len;
  l.max_queue = engine_.config().max_queue;
  l.batch_size = engine_.config().scheduler.max_num_seqs;
  l.max_request_tokens = options_.max_request_tokens;
  return l;
}

bool ApiServer::read_openai(HttpExchange& ex, CompletionApi api, PreparedCompletion* out) {
  if (std::optional<ApiError> e =
          parse_completion_params(ex.request().body, api != CompletionApi::kCompletions, &out->params)) {
    reply_error(ex, *e);
    return false;
  }
  out->default_max_tokens = out->params.chat ? DefaultMaxTokens::kRestOfContext : DefaultMaxTokens::kSixteen;
  return true;
}

bool ApiServer::read_responses(HttpExchange& ex, PreparedCompletion* out) {
  if (std::optional<ApiError> e = parse_responses_request(ex.request().body, &out->params, &out->responses_echo)) {
    reply_error(ex, *e);
    return false;
  }
  out->default_max_tokens = DefaultMaxTokens::kRestOfContext;
  return true;
}

bool ApiServer::read_anthropic(HttpExchange& ex, PreparedCompletion* out) {
  if (std::optional<ApiError> e = parse_anthropic_messages(ex.request().body, &out->params)) {
    reply_error(ex, *e);
    return false;
  }
  out->default_max_tokens = DefaultMaxTokens::kRestOfContext;
  return true;
}

bool ApiServer::read_ollama(HttpExchange& ex, CompletionApi api, PreparedCompletion* out) {
  OllamaRequest request;
  if (std::optional<ApiError> e = api == CompletionApi::kOllamaChat ? parse_ollama_chat(ex.request().body, &request)
                                                                     : parse_ollama_generate(ex.request().body, &request)) {
    reply_error(ex, *e);
    return false;
  }
  if (!ollama_model_matches(request.model, options_.model_name)) {
    reply_error(ex, ollama_model_not_found(request.model));
    return false;
  }
  if (!request.ignored_options.empty())
    log_.message(fmt::format("{} {}: options without effect on this server, accepted and ignored: {}",
                             ex.request().method, ex.request().path, fmt::join(request.ignored_options, ", ")));
  if (request.num_ctx) {
    if (*request.num_ctx > out->limits.max_seq_len)
      log_.message(fmt::format("{}: options.num_ctx {} capped to the server's context of {} tokens",
                               ex.request().path, *request.num_ctx, out->limits.max_seq_len));
    out->limits.max_seq_len = std::min(out->limits.max_seq_len, *request.num_ctx);
  }
  if (request.load_only) {
    // Ollama's "load the model" call: the model is loaded (a server of several loaded it for this request).
    json r = {{"model", request.model}, {"created_at", ollama_timestamp()}};
    if (api == CompletionApi::kOllamaChat)
      r["message"] = {{"role", "assistant"}, {"content", ""}};
    else
      r["response"] = "";
    r["done_reason"] = "load";
    r["done"] = true;
    reply(ex, json_response(200, r), "load");
    return false;
  }
  out->params = std::move(request.params);
  if (std::optional<ApiError> e = apply_ollama_think(request, &out->params)) {
    reply_error(ex, *e);
    return false;
  }
  out->ollama_model = std::move(request.model);
  out->default_max_tokens = DefaultMaxTokens::kRestOfContext;
  return true;
}

bool ApiServer::read_llama(HttpExchange& ex, CompletionApi api, PreparedCompletion* out) {
  std::string body = ex.request().body;
  if (api == CompletionApi::kLlamaInfill) {
    if (!options_.fim.complete()) {
      reply_error(ex, invalid_request(fmt::format("this model has no fill-in-the-middle tokens (missing: {}), "
                                                  "so /infill cannot build its prompt",
                                                  options_.fim.missing())));
      return false;
    }
    if (std::optional<ApiError> e =
            split_llama_infill(ex.request().body, &out->infill_prefix, &out->infill_suffix, &body)) {
      reply_error(ex, *e);
      return false;
    }
  }
  LlamaCompletionRequest request;
  if (std::optional<ApiError> e = parse_llama_completion(body, &request)) {
    reply_error(ex, *e);
    return false;
  }
  out->params = std::move(request.params);
  out->llama_return_tokens = request.return_tokens;
  out->llama_n_probs = request.n_probs;
  out->default_max_tokens = DefaultMaxTokens::kRestOfContext;
  return true;
}

void ApiServer::handle_completion(std::shared_ptr<HttpExchange>& ex, CompletionApi api, int64_t received_us) {
  PreparedCompletion prepared;
  prepared.api = api;
  prepared.received_us = received_us;
  prepared.limits = request_limits();
  bool read = false;
  switch (api) {
    case CompletionApi::kCompletions:
    case CompletionApi::kChat: read = read_openai(*ex, api, &prepared); break;
    case CompletionApi::kResponses: read = read_responses(*ex, &prepared); break;
    case CompletionApi::kAnthropicMessages: read = read_anthropic(*ex, &prepared); break;
    case CompletionApi::kOllamaChat:
    case CompletionApi::kOllamaGenerate: read = read_ollama(*ex, api, &prepared); break;
    case CompletionApi::kLlamaCompletion:
    case CompletionApi::kLlamaInfill: read = read_llama(*ex, api, &prepared); break;
  }
  if (!read) return;  // answered
  if (std::optional<ApiError> e = validate_completion(prepared)) return reply_error(*ex, *e);
  if (!prepared.params.constraint) return launch_completion(ex, std::move(prepared), nullptr);
  if (auto hit = grammar_compiler_.cached(prepared.params.constraint->spec))
    return finish_compile(ex, std::move(prepared), std::move(*hit));
  compile_then_launch(ex, std::move(prepared));
}

std::optional<ApiError> ApiServer::validate_completion(PreparedCompletion& prepared) const {
  CompletionParams& params = prepared.params;
  const RequestLimits& limits = prepared.limits;
  const CompletionApi api = prepared.api;
  const bool chat = params.chat;
  if (params.model && *params.model != options_.model_name)
    return not_found(
        fmt::format("The model '{}' does not exist; this server serves '{}'", *params.model, options_.model_name),
        "model_not_found");
  if ((params.prompt_logprobs >= 0 || (params.echo && params.logprobs >= 0)) && !engine_.config().prompt_logits)
    return invalid_request(fmt::format("'{}' needs the prompt's logprobs, which this server does not "
                                       "compute{}",
                                       params.prompt_logprobs >= 0 ? "prompt_logprobs" : "echo",
                                       options_.prompt_logprobs_off.empty() ? std::string()
                                                                            : ": " + options_.prompt_logprobs_off),
                           params.prompt_logprobs >= 0 ? "prompt_logprobs" : "echo");
  prepared.num_prompts = chat ? 1 : int64_t(params.prompts.size());
  if (std::optional<ApiError> e = check_queue_entries(limits, prepared.num_prompts, params.n)) return e;

  std::vector<JobPrompt>& prompts = prepared.prompts;
  if (chat) {
    JobPrompt p;
    auto tokens = chat_prompt_tokens(params, prepared.received_us, &p.opens_reasoning);
    if (const ApiError* e = std::get_if<ApiError>(&tokens)) return *e;
    p.tokens = std::move(std::get<std::vector<TokenId>>(tokens));
    prompts.push_back(std::move(p));
  } else {
    for (const PromptInput& in : params.prompts) {
      JobPrompt p;
      if (in.text) {
        p.tokens = tokenizer_.encode(*in.text, options_.add_bos);
        if (params.echo) p.echo_text = *in.text;
      } else {
        if (std::optional<ApiError> e = check_token_ids(in.tokens, limits.vocab_size, "prompt", "prompt")) return e;
        p.tokens = in.tokens;
        if (params.echo) p.echo_text = tokenizer_.decode(in.tokens);
      }
      if (params.suffix) {
        // OpenAI's suffix: the prompt is the text before the insertion, as /infill's input_prefix.
        if (!options_.fim.complete())
          return invalid_request(fmt::format("'suffix' needs the model's fill-in-the-middle tokens, which it lacks "
                                             "(missing: {})",
                                             options_.fim.missing()),
                                 "suffix");
        std::vector<TokenId> before = in.text ? tokenizer_.encode(*in.text, false) : in.tokens;
        p.tokens = llama_infill_tokens(options_.fim,
                                       options_.add_bos ? std::optional<TokenId>(tokenizer_.bos_id()) : std::nullopt,
                                       before, tokenizer_.encode(*params.suffix, false), {});
      }
      if (api == CompletionApi::kLlamaInfill) {
        std::vector<TokenId> middle = in.text ? tokenizer_.encode(*in.text, false) : in.tokens;
        p.tokens = llama_infill_tokens(options_.fim,
                                       options_.add_bos ? std::optional<TokenId>(tokenizer_.bos_id()) : std::nullopt,
                                       tokenizer_.encode(prepared.infill_prefix, false),
                                       tokenizer_.encode(prepared.infill_suffix, false), middle);
      }
      if (p.tokens.empty()) return invalid_request("the prompt is empty", "prompt");
      prompts.push_back(std::move(p));
    }
  }
  if (std::optional<ApiError> late = deadline_error(prepared.received_us)) return late;
  int64_t longest = 0, num_prompt_tokens = 0;
  for (const JobPrompt& p : prompts) {
    longest = std::max<int64_t>(longest, int64_t(p.tokens.size()));
    num_prompt_tokens += int64_t(p.tokens.size());
  }
  if (std::optional<ApiError> e = apply_length_limits(limits, longest, prepared.default_max_tokens, &params)) return e;
  auto work = bound_request_work(limits, &params, prepared.num_prompts, num_prompt_tokens);
  if (const ApiError* e = std::get_if<ApiError>(&work)) return *e;
  prepared.buffered_tokens = params.stream ? 0 : std::get<int64_t>(work);
  // A forced tool call is a constraint too: the tools' call array (required), or the named function's arguments.
  if (chat && params.tools.active() && params.tools.choice != ToolChoice::kAuto) {
    OutputConstraint c;
    c.param = "tools";
    c.spec.kind = grammar::GrammarSpec::Kind::kJsonSchema;
    // Compact JSON: a call is read by a program, and a weak model must not spend its tokens on whitespace.
    c.spec.json_options.allow_whitespace = false;
    // And only the properties a schema lists (additionalProperties absent means none), as strict function calling.
    c.spec.json_options.closed_objects = true;
    if (params.tools.choice == ToolChoice::kRequired) {
      c.spec.text = required_tool_calls_schema(params.tools.tools, params.tools.parallel_tool_calls).dump();
    } else {
      for (const ToolFunction& t : params.tools.tools)
        if (t.name == params.tools.named) c.spec.text = arguments_schema(t).dump();
    }
    params.constraint = std::move(c);
  }
  prepared.writer = make_writer(prepared);
  return std::nullopt;
}

std::unique_ptr<ResponseWriter> ApiServer::make_writer(const PreparedCompletion& prepared) const {
  const CompletionParams& params = prepared.params;
  const bool chat = params.chat;
  switch (prepared.api) {
    case CompletionApi::kAnthropicMessages:
      return std::make_unique<AnthropicWriter>(ids_, options_.model_name,
                                               params.tools.active() && params.tools.choice != ToolChoice::kAuto,
                                               reasoning_syntax(params) != ReasoningSyntax::kNone);
    case CompletionApi::kLlamaCompletion:
    case CompletionApi::kLlamaInfill:
      return std::make_unique<LlamaWriter>(
          ids_, options_.model_name, llama_generation_settings(params.sampling, prepared.llama_n_probs, params.stream),
          params.prompts.empty()     ? std::string()
          : params.prompts[0].text ? *params.prompts[0].text
                                   : tokenizer_.decode(params.prompts[0].tokens),
          prepared.llama_return_tokens, prepared.llama_n_probs > 0);
    case CompletionApi::kOllamaChat:
    case CompletionApi::kOllamaGenerate:
      return std::make_unique<OllamaWriter>(ids_, prepared.api == CompletionApi::kOllamaChat, prepared.ollama_model);
    case CompletionApi::kResponses:
      return std::make_unique<ResponsesWriter>(ids_, options_.model_name, prepared.responses_echo);
    case CompletionApi::kCompletions:
    case CompletionApi::kChat: break;
  }
  return std::make_unique<OpenAiWriter>(ids_, chat, options_.model_name, params.logprobs >= 0, params.include_usage,
                                        params.tools.legacy_functions);
}

void ApiServer::compile_then_launch(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++num_preparing_;
  }
  auto done_preparing = [this] {
    std::lock_guard<std::mutex> lock(mutex_);
    --num_preparing_;
  };
  auto prepared_ptr = std::make_shared<PreparedCompletion>(std::move(prepared));
  auto task = [this, ex, prepared_ptr, done_preparing] {
    PreparedCompletion& p = *prepared_ptr;
    try {
      const int64_t deadline_us =
          options_.request_timeout.count() > 0 ? p.received_us + int64_t(options_.request_timeout.count()) * 1000 : -1;
      // A hostile grammar may take a while to refuse: the compile gives up at the request's deadline, when its
      // client leaves and at shutdown.
      const auto should_stop = [this, deadline_us, ex] {
        return stop_preparing_.load(std::memory_order_relaxed) || (deadline_us >= 0 && now_us() >= deadline_us) ||
               ex->closed();
      };
      if (!should_stop()) {
        auto compiled = grammar_compiler_.compile(p.params.constraint->spec, should_stop);
        finish_compile(ex, std::move(p), std::move(compiled));
      } else {
        finish_compile(ex, std::move(p), make_error("not started", StatusCode::kCancelled));
      }
    } catch (const std::exception& e) {
      reply_internal_error(*ex, e.what());
    }
    done_preparing();
  };
  if (!compile_workers_->try_post(std::move(task))) {
    done_preparing();
    reply_error(*ex, unavailable(fmt::format("the server is busy: {} new grammars wait to be compiled; retry later",
                                             kMaxQueuedCompiles)));
  }
}

void ApiServer::finish_compile(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared,
                               Result<std::shared_ptr<const grammar::CompiledGrammar>> compiled) {
  if (compiled.ok()) return launch_completion(ex, std::move(prepared), std::move(compiled).value());
  if (compiled.status().code() == StatusCode::kCancelled) {
    if (ex->closed()) return;  // nobody to answer
    if (std::optional<ApiError> late = deadline_error(prepared.received_us)) return reply_error(*ex, *late);
    return reply_error(*ex, unavailable("the server is shutting down; retry on another replica"));
  }
  const std::string& param = prepared.params.constraint->param;
  reply_error(*ex, invalid_request(fmt::format("'{}' cannot be enforced: {}", param, compiled.error()), param));
}

void ApiServer::launch_completion(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared,
                                  std::shared_ptr<const grammar::CompiledGrammar> constraint) {
  JobContext ctx = job_context();
  if (prepared.params.chat) ctx.reasoning_syntax = reasoning_syntax(prepared.params);
  launch_job(
      ex, prepared.received_us, prepared.buffered_tokens,
      [&](std::function<void()> on_done) {
        return std::make_shared<CompletionJob>(std::move(ctx), ex, std::move(prepared.params),
                                               std::move(prepared.writer), std::move(on_done));
      },
      [prompts = std::move(prepared.prompts), constraint = std::move(constraint)](ServerJob& job) mutable {
        return static_cast<CompletionJob&>(job).start(std::move(prompts), std::move(constraint));
      });
}

void ApiServer::launch_job(const std::shared_ptr<HttpExchange>& ex, int64_t received_us, int64_t buffered,
                           const std::function<std::shared_ptr<ServerJob>(std::function<void()>)>& make_job,
                           std::function<bool(ServerJob&)> start) {
  uint64_t job_id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (buffered > 0 && buffered_tokens_ > 0 && buffered_tokens_ + buffered > options_.max_buffered_tokens)
      return reply_error(*ex, unavailable(fmt::format(
                                  "the server is building whole responses of {} tokens for other requests and holds "
                                  "at most {} (--max-buffered-tokens); retry later, or stream the response",
                                  buffered_tokens_, options_.max_buffered_tokens)));
    job_id = next_job_id_++;
  }
  std::shared_ptr<ServerJob> job = make_job([this, job_id] {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return;
    buffered_tokens_ -= it->second.buffered_tokens;
    // A large whole response was built and freed: give its pages back.
    if (it->second.buffered_tokens >= (int64_t(1) << 16)) workers_->try_post([] { malloc_trim(0); });
    jobs_.erase(it);
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ActiveJob a;
    a.job = job;
    if (options_.request_timeout.count() > 0)
      a.deadline_us = received_us + int64_t(options_.request_timeout.count()) * 1000;
    a.buffered_tokens = buffered;
    buffered_tokens_ += buffered;
    jobs_.emplace(job_id, std::move(a));
  }
  // Submitting and what follows run on the exchange's strand, as every later event of the job does.
  ex->post([this, job, job_id, path = ex->request().path, start = std::move(start)]() mutable {
    bool started = false;
    try {
      started = start(*job);
    } catch (const std::exception& e) {
      job->fail(std::string("starting the request: ") + e.what());
      log_.message(fmt::format("internal error starting a {} request: {}", path, e.what()));
      return;
    }
    if (!started) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = jobs_.find(job_id);
      if (it != jobs_.end()) {
        buffered_tokens_ -= it->second.buffered_tokens;
        jobs_.erase(it);
      }
    }
  });
}

void ApiServer::handle_embeddings(std::shared_ptr<HttpExchange>& ex, int64_t received_us, EmbeddingParams::Api api) {
  EmbeddingParams params;
  if (api == EmbeddingParams::Api::kOllama || api == EmbeddingParams::Api::kOllamaLegacy) {
    const bool legacy = api == EmbeddingParams::Api::kOllamaLegacy;
    std::string model;
    if (std::optional<ApiError> e = parse_ollama_embed(ex->request().body, legacy, &params, &model))
      return reply_error(*ex, *e);
    if (!ollama_model_matches(model, options_.model_name)) return reply_error(*ex, ollama_model_not_found(model));
    params.api = api;
    // Ollama's legacy endpoint returns the pooled vector as it is.
    params.normalize = !legacy;
    params.ollama_model = std::move(model);
  } else if (std::optional<ApiError> e = api == EmbeddingParams::Api::kLlama
                                             ? parse_llama_embedding_params(ex->request().body, &params)
                                             : parse_embedding_params(ex->request().body, &params)) {
    return reply_error(*ex, *e);
  }
  if (params.model && *params.model != options_.model_name)
    return reply_error(*ex, not_found(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                                  *params.model, options_.model_name),
                                      "model_not_found"));
  if (!engine_.config().pooling)
    return reply_error(*ex, invalid_request("this server computes no embeddings: its engine runs over --tp/--pp "
                                            "ranks, which do not pool hidden states"));
  // Shorter vectors only where the model was trained for them (Matryoshka): its metadata or the serve flag says so.
  if (params.dimensions)
    if (std::optional<ApiError> e =
            check_embedding_dimensions(*params.dimensions, engine_.model_dim(), options_.matryoshka))
      return reply_error(*ex, *e);
  const RequestLimits limits = request_limits();
  if (std::optional<ApiError> e = check_pooling_queue(limits, int64_t(params.inputs.size()), "inputs", "input"))
    return reply_error(*ex, *e);
  std::vector<std::vector<TokenId>> inputs;
  for (size_t i = 0; i < params.inputs.size(); ++i) {
    const PromptInput& in = params.inputs[i];
    std::vector<TokenId> tokens;
    if (in.text) {
      tokens = tokenizer_.encode(*in.text, options_.add_bos);
      if (options_.embedding_eos) tokens.push_back(*options_.embedding_eos);
    } else {
      if (std::optional<ApiError> e = check_token_ids(in.tokens, limits.vocab_size, "input", "input"))
        return reply_error(*ex, *e);
      tokens = in.tokens;
    }
    if (tokens.empty()) return reply_error(*ex, invalid_request(fmt::format("input {} has no tokens", i), "input"));
    if (std::optional<ApiError> e = check_embedding_length(limits, i, int64_t(tokens.size())))
      return reply_error(*ex, *e);
    inputs.push_back(std::move(tokens));
  }
  if (std::optional<ApiError> late = deadline_error(received_us)) return reply_error(*ex, *late);
  JobContext ctx = job_context();
  const Pooling pooling = options_.pooling;
  launch_job(
      ex, received_us, 0,
      [&](std::function<void()> on_done) {
        return std::make_shared<EmbeddingJob>(std::move(ctx), ex, std::move(params), std::move(on_done));
      },
      [inputs = std::move(inputs), pooling](ServerJob& job) mutable {
        return static_cast<EmbeddingJob&>(job).start(std::move(inputs), pooling);
      });
}

void ApiServer::handle_rerank(std::shared_ptr<HttpExchange>& ex, int64_t received_us) {
  RerankParams params;
  if (std::optional<ApiError> e = parse_rerank_params(ex->request().body, &params)) return reply_error(*ex, *e);
  if (params.model && *params.model != options_.model_name)
    return reply_error(*ex, not_found(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                                  *params.model, options_.model_name),
                                      "model_not_found"));
  if (!engine_.config().pooling)
    return reply_error(*ex, invalid_request("this server scores no documents: its engine runs over --tp/--pp ranks, "
                                            "which do not pool hidden states"));
  if (engine_.num_rank_outputs() == 0)
    return reply_error(*ex, invalid_request(fmt::format("the model '{}' is not a reranker: it has no classification "
                                                        "head (a cross-encoder's cls.output tensor) to score a "
                                                        "query/document pair",
                                                        options_.model_name)));
  if (std::optional<ApiError> e =
          check_pooling_queue(request_limits(), int64_t(params.documents.size()), "documents", "documents"))
    return reply_error(*ex, *e);
  std::vector<std::vector<TokenId>> pairs;
  pairs.reserve(params.documents.size());
  for (size_t i = 0; i < params.documents.size(); ++i) {
    std::vector<TokenId> tokens =
        rerank_pair_tokens(tokenizer_, options_.rerank_framing, params.query, params.documents[i]);
    if (int64_t(tokens.size()) >= options_.max_seq_len)
      return reply_error(*ex, invalid_request(fmt::format("the query with document {} is {} tokens; this model's "
                                                          "context holds {} for a pair to score",
                                                          i, tokens.size(), options_.max_seq_len - 1),
                                              "documents"));
    pairs.push_back(std::move(tokens));
  }
  if (std::optional<ApiError> late = deadline_error(received_us)) return reply_error(*ex, *late);
  JobContext ctx = job_context();
  launch_job(
      ex, received_us, 0,
      [&](std::function<void()> on_done) {
        return std::make_shared<RerankJob>(std::move(ctx), ex, std::move(params), std::move(on_done));
      },
      [pairs = std::move(pairs)](ServerJob& job) mutable {
        return static_cast<RerankJob&>(job).start(std::move(pairs), Pooling::kRank);
      });
}

LlamaServerFacts ApiServer::llama_facts() const {
  LlamaServerFacts f;
  f.model_name = options_.model_name;
  f.model_path = options_.model_path;
  f.chat_template = options_.ollama.chat_template;
  f.bos_token = options_.bos_text;
  f.eos_token = options_.eos_text;
  f.total_slots = engine_.config().scheduler.max_num_seqs;
  f.n_ctx = options_.max_seq_len;
  f.busy_slots = std::min(f.total_slots, num_active_jobs());
  return f;
}

std::optional<ApiError> ApiServer::apply_ollama_think(const OllamaRequest& request, CompletionParams* params) const {
  if (!request.think) return std::nullopt;
  const ChatTemplate& chat_template = options_.chat_template;
  if (*request.think) {
    // A model thinks where its template shows reasoning syntax; a raw prompt has no template to ask.
    if (!params->chat || reasoning_syntax(*params) == ReasoningSyntax::kNone) return ollama_no_thinking(request.model);
    if (request.think_level) {
      params->reasoning_effort = request.think_level;  // refused by the render where the template reads none
      params->reasoning_effort_param = "think";
    } else if (chat_template.reads_variable("enable_thinking")) {
      params->enable_thinking = true;
    }
  } else if (params->chat && chat_template.reads_variable("enable_thinking")) {
    params->enable_thinking = false;
  }
  return std::nullopt;
}

OllamaModelFacts ApiServer::ollama_facts() const {
  OllamaModelFacts f = options_.ollama;
  f.name = options_.model_name;
  f.context_length = options_.max_seq_len;
  f.embeddings = engine_.config().pooling;
  f.tools = true;  // through the template's tools, or the default tool prompt
  f.thinking = reasoning_syntax_for(options_.reasoning_format, options_.chat_template.reasoning_syntax()) !=
               ReasoningSyntax::kNone;
  if (f.started_at.empty()) f.started_at = started_at_;
  return f;
}

bool ApiServer::handle_ollama_info(HttpExchange& ex, const std::string& path) {
  if (path == "/api/tags" || path == "/api/ps") {
    HttpResponse r;
    r.body = path == "/api/tags" ? ollama_tags_json(ollama_facts()) : ollama_ps_json(ollama_facts());
    reply(ex, std::move(r));
    return true;
  }
  if (path != "/api/show") return false;
  if (ex.request().method != "POST") {
    reply_error(ex, method_not_allowed(path, ex.request().method, "POST"));
    return true;
  }
  json body;
  if (std::optional<ApiError> e = parse_json_object(ex.request().body, &body)) {
    reply_error(ex, *e);
    return true;
  }
  // Ollama's older clients send "name".
  std::string model;
  for (const char* key : {"model", "name"})
    if (auto it = body.find(key); it != body.end() && it->is_string()) model = it->get<std::string>();
  for (const auto& [key, value] : body.items())
    if (key != "model" && key != "name" && key != "verbose" && key != "system" && key != "options") {
      reply_error(ex, invalid_request(fmt::format("'{}' is not supported by this server's /api/show", key), key));
      return true;
    }
  if (model.empty()) {
    reply_error(ex, invalid_request("model is required", "model"));
    return true;
  }
  if (!ollama_model_matches(model, options_.model_name)) {
    reply_error(ex, ollama_model_not_found(model));
    return true;
  }
  HttpResponse r;
  r.body = ollama_show_json(ollama_facts());
  reply(ex, std::move(r));
  return true;
}

void ApiServer::handle_apply_template(HttpExchange& ex, int64_t received_us) {
  // llama-server's: a chat request's prompt as the template renders it, nothing generated.
  CompletionParams params;
  if (std::optional<ApiError> e = parse_completion_params(ex.request().body, true, &params)) return reply_error(ex, *e);
  auto text = chat_prompt_text(params, received_us);
  if (const ApiError* e = std::get_if<ApiError>(&text)) return reply_error(ex, *e);
  reply(ex, json_response(200, {{"prompt", std::get<std::string>(text)}}));
}

void ApiServer::handle_count_tokens(HttpExchange& ex, int64_t received_us) {
  CompletionParams params;
  if (std::optional<ApiError> e = parse_anthropic_count_tokens(ex.request().body, &params)) return reply_error(ex, *e);
  if (params.model && *params.model != options_.model_name)
    return reply_error(ex, not_found(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                                 *params.model, options_.model_name),
                                     "model_not_found"));
  auto tokens = chat_prompt_tokens(params, received_us);
  if (const ApiError* e = std::get_if<ApiError>(&tokens)) return reply_error(ex, *e);
  reply(ex, json_response(200, {{"input_tokens", std::get<std::vector<TokenId>>(tokens).size()}}));
}

void ApiServer::handle_tokenize(HttpExchange& ex, int64_t received_us) {
  json body;
  if (std::optional<ApiError> e = parse_json_object(ex.request().body, &body)) return reply_error(ex, *e);
  for (const auto& [key, value] : body.items())
    if (key != "model" && key != "prompt" && key != "messages" && key != "add_special_tokens" &&
        key != "add_generation_prompt" && key != "parse_special" && key != "content" && key != "add_special" &&
        key != "with_pieces")
      return reply_error(ex, invalid_request("Unrecognized request argument supplied: " + key, key));
  // llama-server's spelling (content, add_special, with_pieces) adds no BOS unless asked, as llama-server does.
  const bool llama_server = body.contains("content");
  if (llama_server && body.contains("prompt"))
    return reply_error(ex, invalid_request("give 'prompt' or llama-server's 'content', not both", "content"));
  bool add_special = !llama_server;
  for (const char* key : {"add_special_tokens", "add_special"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null()) {
      if (!it->is_boolean())
        return reply_error(ex, invalid_request(fmt::format("'{}' must be a boolean", key), key));
      add_special = it->get<bool>();
    }
  }
  bool with_pieces = false;
  if (auto it = body.find("with_pieces"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return reply_error(ex, invalid_request("'with_pieces' must be a boolean", "with_pieces"));
    with_pieces = it->get<bool>();
  }
  // llama.cpp's field: false reads special tokens written in the prompt as plain text.
  bool parse_special = true;
  if (auto it = body.find("parse_special"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean())
      return reply_error(ex, invalid_request("'parse_special' must be a boolean", "parse_special"));
    if (!it->get<bool>() && body.contains("messages"))
      return reply_error(ex, invalid_request("'parse_special' false applies to 'prompt' only", "parse_special"));
    parse_special = it->get<bool>();
  }
  std::vector<TokenId> tokens;
  if (auto it = body.find(llama_server ? "content" : "prompt"); it != body.end() && it->is_string()) {
    tokens = tokenizer_.encode(it->get<std::string>(), add_special && options_.add_bos, parse_special);
  } else if (body.contains("messages")) {
    // The chat request's own fields, parsed as /v1/chat/completions parses them.
    json chat = {{"messages", body["messages"]}};
    if (body.contains("add_generation_prompt")) chat["add_generation_prompt"] = body["add_generation_prompt"];
    CompletionParams params;
    if (std::optional<ApiError> e = parse_completion_params(json_text(chat), true, &params)) return reply_error(ex, *e);
    auto chat_tokens = chat_prompt_tokens(params, received_us);
    if (const ApiError* e = std::get_if<ApiError>(&chat_tokens)) return reply_error(ex, *e);
    tokens = std::move(std::get<std::vector<TokenId>>(chat_tokens));
  } else {
    return reply_error(ex, invalid_request("'prompt' (a string) or 'messages' is required", "prompt"));
  }
  json ids = tokens;
  if (with_pieces) {
    // llama-server's pieces: a token's text where its bytes are valid UTF-8, else the bytes.
    ids = json::array();
    for (TokenId t : tokens) {
      const std::string piece = tokenizer_.token_bytes(t, -1);
      // Valid UTF-8 when dropping the invalid bytes (nlohmann's ignore handler) drops nothing.
      const std::string valid =
          json::parse(json(piece).dump(-1, ' ', false, json::error_handler_t::ignore)).get<std::string>();
      ids.push_back({{"id", t},
                     {"piece", valid.size() == piece.size() ? json(piece)
                                                            : json(std::vector<uint8_t>(piece.begin(), piece.end()))}});
    }
  }
  reply(ex, json_response(200, {{"tokens", ids}, {"count", tokens.size()}, {"max_model_len", options_.max_model_len}}));
}

ReasoningSyntax ApiServer::reasoning_syntax(const CompletionParams& params) const {
  return reasoning_syntax_for(params.reasoning_format.value_or(options_.reasoning_format),
                              options_.chat_template.reasoning_syntax());
}

std::variant<std::string, ApiError> ApiServer::chat_prompt_text(const CompletionParams& params,
                                                               int64_t received_us) const {
  // A template from the model file may be hostile: its render has a work budget, and stops at the request's
  // deadline and at shutdown.
  const int64_t deadline_us =
      options_.request_timeout.count() > 0 ? received_us + int64_t(options_.request_timeout.count()) * 1000 : -1;
  const auto should_stop = [this, deadline_us] {
    return stop_preparing_.load(std::memory_order_relaxed) || (deadline_us >= 0 && now_us() >= deadline_us);
  };
  // Tools reach the model through its template's `tools` value, or, for a template that has none, as the default
  // tool prompt in the system message. With tool_choice "none" the model is not told of them.
  nlohmann::ordered_json extra_context = params.chat_template_kwargs;
  // The reasoning switches act through the template's values; a template that reads none cannot honour them.
  const ChatTemplate& chat_template = options_.chat_template;
  if (params.reasoning_effort) {
    if (!chat_template.reads_variable("reasoning_effort"))
      return invalid_request(fmt::format("'{}': this model's chat template reads no reasoning_effort",
                                         params.reasoning_effort_param),
                             params.reasoning_effort_param);
    if (!extra_context.contains("reasoning_effort")) extra_context["reasoning_effort"] = *params.reasoning_effort;
  }
  if (params.enable_thinking) {
    if (chat_template.reads_variable("enable_thinking")) {
      if (!extra_context.contains("enable_thinking")) extra_context["enable_thinking"] = *params.enable_thinking;
    } else if (!*params.enable_thinking || reasoning_syntax(params) == ReasoningSyntax::kNone) {
      // A model that always thinks may be asked to; one that never does, or cannot be stopped, may not.
      return invalid_request(fmt::format("'thinking' {}: this model's chat template has no enable_thinking switch{}",
                                         *params.enable_thinking ? "enabled" : "disabled",
                                         *params.enable_thinking ? " and no reasoning syntax" : ""),
                             "thinking");
    }
  }
  std::vector<ChatMessage> with_tools;
  std::span<const ChatMessage> messages = params.messages;
  if (params.tools.active()) {
    if (options_.chat_template.renders_tools()) {
      extra_context["tools"] = tools_json(params.tools.tools);
    } else {
      with_tools = params.messages;
      const std::string prompt = default_tool_prompt(params.tools.tools);
      if (!with_tools.empty() && (with_tools[0].role == "system" || with_tools[0].role == "developer"))
        with_tools[0].content += "\n\n" + prompt;
      else
        with_tools.insert(with_tools.begin(), ChatMessage{"system", prompt, {}, {}, {}});
      messages = with_tools;
    }
  }
  Result<std::string> text =
      options_.chat_template.try_render(messages, params.add_generation_prompt, extra_context, should_stop);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kCancelled) {
      if (std::optional<ApiError> late = deadline_error(received_us)) return *late;
      return unavailable("the server is shutting down; retry on another replica");
    }
    if (text.status().code() == StatusCode::kLimitExceeded)
      return invalid_request("the chat template's rendering exceeded its limits: " + text.error(), "messages");
    return invalid_request("the chat template refused the messages: " + text.error(), "messages");
  }
  return std::move(*text);
}

std::variant<std::vector<TokenId>, ApiError> ApiServer::chat_prompt_tokens(const CompletionParams& params,
                                                                           int64_t received_us,
                                                                           bool* opens_reasoning) const {
  auto text = chat_prompt_text(params, received_us);
  if (const ApiError* e = std::get_if<ApiError>(&text)) return *e;
  std::string_view prompt = std::get<std::string>(text);
  if (opens_reasoning != nullptr) *opens_reasoning = prompt_opens_reasoning(reasoning_syntax(params), prompt);
  bool add_bos = options_.add_bos;
  if (options_.chat_template.format() == ChatFormat::kJinja) {
    // A Jinja template writes BOS as text where the model wants it; the tokenizer must add the token instead
    // (it does not match special tokens inside text), and must not add one the template left out.
    add_bos = !options_.bos_text.empty() && prompt.starts_with(options_.bos_text);
    if (add_bos) prompt.remove_prefix(options_.bos_text.size());
  }
  return tokenizer_.encode(prompt, add_bos);
}

void ApiServer::handle_detokenize(HttpExchange& ex) {
  json body;
  if (std::optional<ApiError> e = parse_json_object(ex.request().body, &body)) return reply_error(ex, *e);
  auto it = body.find("tokens");
  if (it == body.end() || !it->is_array())
    return reply_error(ex, invalid_request("'tokens' (an array of ids) is required", "tokens"));
  std::vector<TokenId> tokens;
  for (const json& t : *it) {
    if (!t.is_number_integer() && !t.is_number_unsigned())
      return reply_error(ex, invalid_request("'tokens' must hold integers", "tokens"));
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id >= tokenizer_.vocab_size())
      return reply_error(ex, invalid_request(fmt::format("token id {} is outside the vocabulary (0..{})", id,
                                                         tokenizer_.vocab_size() - 1),
                                             "tokens"));
    tokens.push_back(TokenId(id));
  }
  const std::string text = tokenizer_.decode(tokens);
  reply(ex, json_response(200, {{"prompt", text}, {"content", text}}));  // vLLM's name and llama-server's
}

void ApiServer::expire_all(const ApiError& why) {
  // mutex_ held by the caller.
  for (auto& [id, a] : jobs_) {
    a.expired = true;
    std::shared_ptr<ServerJob> job = a.job;
    job->exchange().post([job, why] { job->expire(why); });
  }
}

void ApiServer::tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = now_us();
  for (auto& [id, a] : jobs_) {
    if (a.expired || a.deadline_us < 0 || now < a.deadline_us) continue;
    a.expired = true;
    const ApiError e = timeout_error();
    std::shared_ptr<ServerJob> job = a.job;
    job->exchange().post([job, e] { job->expire(e); });
  }
  if (draining_ && !drain_cut_ && now >= drain_deadline_us_) {
    drain_cut_ = true;
    expire_all(unavailable("the server shut down before the request finished"));
  }
}

void ApiServer::begin_shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (draining_) {
    drain_deadline_us_ = 0;  // a second signal: end everything now
    log_.message("second signal: ending the remaining requests now");
    return;
  }
  draining_ = true;
  stop_preparing_ = true;
  drain_deadline_us_ = now_us() + int64_t(options_.drain_timeout.count()) * 1000;
  log_.message(fmt::format("shutting down: {} requests in flight, waiting up to {:.3g} s for them", jobs_.size(),
                           double(options_.drain_timeout.count()) / 1e3));
}

bool ApiServer::shutdown_complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return draining_ && jobs_.empty() && num_preparing_ == 0;
}

int32_t ApiServer::num_active_jobs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int32_t(jobs_.size());
}

}  // namespace pagoda::server
