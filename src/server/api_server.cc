// ApiServer: routing, authentication, prompt building and the lifecycle of the jobs in flight.
#include "server/api_server.h"

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "server/json_text.h"

#include "server/chat_page.h"

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

ApiError context_error(int64_t max_seq_len, int64_t prompt_tokens, int64_t max_tokens) {
  ApiError e = invalid_request(
      max_tokens > 0
          ? fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} in "
                        "the prompt, {} for the completion). Please reduce the prompt or max_tokens.",
                        max_seq_len, prompt_tokens + max_tokens, prompt_tokens, max_tokens)
          : fmt::format("This model's maximum context length is {} tokens. However, the prompt has {} tokens, "
                        "leaving no room for the completion. Please reduce the prompt.",
                        max_seq_len, prompt_tokens),
      max_tokens > 0 ? "max_tokens" : "prompt");
  e.code = "context_length_exceeded";
  return e;
}

}  // namespace

ApiServer::ApiServer(Engine& engine, const Tokenizer& tokenizer, RequestLog& log, ApiServerOptions options)
    : engine_(engine), tokenizer_(tokenizer), log_(log), options_(std::move(options)), metrics_(options_.model_name) {
  created_ =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

ApiServer::~ApiServer() = default;

void ApiServer::reply(HttpExchange& ex, HttpResponse response) {
  metrics_.record_http_request(response.status);
  ex.respond(std::move(response));
}

void ApiServer::reply_error(HttpExchange& ex, const ApiError& error) { reply(ex, error.to_response()); }

void ApiServer::handle(std::shared_ptr<HttpExchange> exchange) { route(exchange); }

void ApiServer::route(std::shared_ptr<HttpExchange>& ex) {
  const HttpRequest& req = ex->request();
  const std::string& path = req.path;
  const bool is_get = req.method == "GET" || req.method == "HEAD";
  const bool is_post = req.method == "POST";
  auto method_not_allowed = [&](const char* allowed) {
    ApiError e = invalid_request(fmt::format("{} does not allow {}; use {}", path, req.method, allowed));
    e.http_status = 405;
    reply_error(*ex, e);
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
    r.body = metrics_.render(engine_.stats(), options_.cache);
    return reply(*ex, std::move(r));
  }
  if (path == "/" || path == "/index.html") {
    if (!is_get) return method_not_allowed("GET");
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = chat_page_html(options_.model_name);
    return reply(*ex, std::move(r));
  }
  const bool known = path == "/v1/completions" || path == "/v1/chat/completions" || path == "/v1/models" ||
                     path.starts_with("/v1/models/") || path == "/tokenize" || path == "/detokenize";
  if (!known) return reply_error(*ex, not_found(fmt::format("no route for {} {}", req.method, path)));

  if (options_.api_key) {
    const std::string& auth = req.header("authorization");
    const std::string expected = "Bearer " + *options_.api_key;
    if (!constant_time_equal(auth, expected)) {
      ApiError e;
      e.http_status = 401;
      e.type = "authentication_error";
      e.code = "invalid_api_key";
      e.message = auth.empty() ? "missing API key: send the header 'Authorization: Bearer KEY'" : "invalid API key";
      return reply_error(*ex, e);
    }
  }

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
  if (!is_post) return method_not_allowed("POST");
  if (path == "/v1/completions") return handle_completion(ex, false);
  if (path == "/v1/chat/completions") return handle_completion(ex, true);
  if (path == "/tokenize") return handle_tokenize(*ex);
  return handle_detokenize(*ex);
}

HttpResponse ApiServer::models_response() const {
  json model = {{"id", options_.model_name}, {"object", "model"},           {"created", created_},
                {"owned_by", "pagoda"},      {"root", options_.model_name}, {"max_model_len", options_.max_model_len}};
  return json_response(200, {{"object", "list"}, {"data", json::array({model})}});
}

void ApiServer::handle_completion(std::shared_ptr<HttpExchange>& ex, bool chat) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_) return reply_error(*ex, unavailable("the server is shutting down; retry on another replica"));
  }
  CompletionParams params;
  if (std::optional<ApiError> e = parse_completion_params(ex->request().body, chat, &params))
    return reply_error(*ex, *e);
  if (params.model && *params.model != options_.model_name)
    return reply_error(*ex, not_found(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                                  *params.model, options_.model_name),
                                      "model_not_found"));

  std::vector<JobPrompt> prompts;
  if (chat) {
    auto tokens = chat_prompt_tokens(params);
    if (const ApiError* e = std::get_if<ApiError>(&tokens)) return reply_error(*ex, *e);
    JobPrompt p;
    p.tokens = std::move(std::get<std::vector<TokenId>>(tokens));
    prompts.push_back(std::move(p));
  } else {
    for (const PromptInput& in : params.prompts) {
      JobPrompt p;
      if (in.text) {
        p.tokens = tokenizer_.encode(*in.text, options_.add_bos);
        if (params.echo) p.echo_text = *in.text;
      } else {
        for (TokenId t : in.tokens)
          if (t >= tokenizer_.vocab_size())
            return reply_error(*ex, invalid_request(fmt::format("prompt token id {} is outside the vocabulary (0..{})",
                                                                t, tokenizer_.vocab_size() - 1),
                                                    "prompt"));
        p.tokens = in.tokens;
        if (params.echo) p.echo_text = tokenizer_.decode(in.tokens);
      }
      if (p.tokens.empty()) return reply_error(*ex, invalid_request("the prompt is empty", "prompt"));
      prompts.push_back(std::move(p));
    }
  }
  const int64_t max_seq_len = options_.max_seq_len;
  int64_t longest = 0;
  for (const JobPrompt& p : prompts) longest = std::max<int64_t>(longest, int64_t(p.tokens.size()));
  if (longest >= max_seq_len) return reply_error(*ex, context_error(max_seq_len, longest, 0));
  if (params.max_tokens_given) {
    if (longest + params.sampling.max_tokens > max_seq_len)
      return reply_error(*ex, context_error(max_seq_len, longest, params.sampling.max_tokens));
  } else {
    // OpenAI's completions default is 16 tokens; chat runs to the end of the context.
    const int64_t room = max_seq_len - longest;
    params.sampling.max_tokens = int32_t(chat ? room : std::min<int64_t>(16, room));
  }

  uint64_t job_id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_id = next_job_id_++;
  }
  auto job = std::make_shared<CompletionJob>(JobContext{&engine_, &tokenizer_, &metrics_, &log_, options_.model_name},
                                             ex, std::move(params), [this, job_id] {
                                               std::lock_guard<std::mutex> lock(mutex_);
                                               jobs_.erase(job_id);
                                             });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ActiveJob a;
    a.job = job;
    if (options_.request_timeout.count() > 0)
      a.deadline_us = engine_.now_us() + int64_t(options_.request_timeout.count()) * 1000;
    jobs_.emplace(job_id, std::move(a));
  }
  if (!job->start(std::move(prompts))) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.erase(job_id);
  }
}

void ApiServer::handle_tokenize(HttpExchange& ex) {
  json body = json::parse(ex.request().body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return reply_error(ex, invalid_request("the request body must be a JSON object"));
  bool add_special = true;
  if (auto it = body.find("add_special_tokens"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean())
      return reply_error(ex, invalid_request("'add_special_tokens' must be a boolean", "add_special_tokens"));
    add_special = it->get<bool>();
  }
  std::vector<TokenId> tokens;
  if (auto it = body.find("prompt"); it != body.end() && it->is_string()) {
    tokens = tokenizer_.encode(it->get<std::string>(), add_special && options_.add_bos);
  } else if (body.contains("messages")) {
    CompletionParams params;
    if (std::optional<ApiError> e = parse_completion_params(ex.request().body, true, &params))
      return reply_error(ex, *e);
    auto chat_tokens = chat_prompt_tokens(params);
    if (const ApiError* e = std::get_if<ApiError>(&chat_tokens)) return reply_error(ex, *e);
    tokens = std::move(std::get<std::vector<TokenId>>(chat_tokens));
  } else {
    return reply_error(ex, invalid_request("'prompt' (a string) or 'messages' is required", "prompt"));
  }
  reply(ex,
        json_response(200, {{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", options_.max_model_len}}));
}

std::variant<std::vector<TokenId>, ApiError> ApiServer::chat_prompt_tokens(const CompletionParams& params) const {
  Result<std::string> text = options_.chat_template.try_render(params.messages, params.add_generation_prompt);
  if (!text.ok()) return invalid_request("the chat template refused the messages: " + text.error(), "messages");
  std::string_view prompt = *text;
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
  json body = json::parse(ex.request().body, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    return reply_error(ex, invalid_request("the request body must be a JSON object"));
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
  reply(ex, json_response(200, {{"prompt", tokenizer_.decode(tokens)}}));
}

void ApiServer::expire_all(const ApiError& why) {
  // mutex_ held by the caller.
  for (auto& [id, a] : jobs_) {
    a.expired = true;
    std::shared_ptr<CompletionJob> job = a.job;
    job->exchange().post([job, why] { job->expire(why); });
  }
}

void ApiServer::tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = engine_.now_us();
  for (auto& [id, a] : jobs_) {
    if (a.expired || a.deadline_us < 0 || now < a.deadline_us) continue;
    a.expired = true;
    ApiError e;
    e.http_status = 408;
    e.type = "timeout_error";
    e.code = "request_timeout";
    e.message = fmt::format("the request took longer than the server's --request-timeout of {:.3g} s",
                            double(options_.request_timeout.count()) / 1e3);
    std::shared_ptr<CompletionJob> job = a.job;
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
  drain_deadline_us_ = engine_.now_us() + int64_t(options_.drain_timeout.count()) * 1000;
  log_.message(fmt::format("shutting down: {} requests in flight, waiting up to {:.3g} s for them", jobs_.size(),
                           double(options_.drain_timeout.count()) / 1e3));
}

bool ApiServer::shutdown_complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return draining_ && jobs_.empty();
}

int32_t ApiServer::num_active_jobs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int32_t(jobs_.size());
}

}  // namespace pagoda::server
