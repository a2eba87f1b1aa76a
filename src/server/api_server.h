// ApiServer: the OpenAI-compatible API over one Engine: routes each HttpExchange (/v1/completions,
// /v1/chat/completions, /v1/responses, /v1/embeddings, Anthropic's /v1/messages, Ollama's /api/*, /v1/models,
// llama-server's /completion, /props, /slots and /apply-template, /health, /metrics, /tokenize, /detokenize, the chat page at /, or
// Ollama's "Ollama is running" there for a client that does not ask for HTML), checks the API key, bounds what one request and all buffered responses may ask for, turns requests into
// CompletionJobs and EmbeddingJobs,
// enforces deadlines, and drains on shutdown. Cheap routes are answered on the I/O thread; parsing, templates and
// tokenization run on its RequestWorkers. Borrows the engine and tokenizer; owns the jobs in flight, the workers
// and the metrics. An exception from a handler becomes a 500 and a log line, never the server's end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "chat/chat_template.h"
#include "engine/engine.h"
#include "engine/pooling.h"
#include "grammar/grammar_compiler.h"
#include "server/completion_job.h"
#include "server/embeddings_protocol.h"
#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/matryoshka_dimensions.h"
#include "server/llama_protocol.h"
#include "server/ollama_protocol.h"
#include "server/request_limits.h"
#include "server/request_log.h"
#include "server/rerank_protocol.h"
#include "server/request_workers.h"
#include "server/response_writer.h"
#include "server/server_job.h"
#include "server/serving_metrics.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::server {

struct ApiServerOptions {
  std::string model_name = "stories260K";
  // Requests to /v1/* and /tokenize need "Authorization: Bearer KEY" (or Anthropic's "x-api-key: KEY").
  std::optional<std::string> api_key;
  ChatTemplate chat_template{ChatFormat::kPlain};
  std::optional<ToolCallFormat> tool_call_format;  // --tool-call-parser; nullopt: the template's (tool_call_format())
  ReasoningFormat reasoning_format = ReasoningFormat::kAuto;  // --reasoning-format (a request's reasoning_format wins)
  std::string bos_text;  // the BOS token's text, which a Jinja template may write (the tokenizer adds BOS itself)
  int32_t max_seq_len = 0;
  int64_t max_model_len = 0;                        // reported by /v1/models
  std::chrono::milliseconds request_timeout{0};     // 0 = none; queue time included
  std::chrono::milliseconds drain_timeout{30'000};  // SIGTERM: how long running requests may finish
  bool add_bos = true;
  CacheConfigInfo cache;
  // Output tokens one request may ask for, summed over its prompts and choices, each logprob alternative
  // counting as one more token (what the response holds). An explicit max_tokens beyond it is a 400; an implied
  // one (chat's rest of the context) is lowered to fit.
  int64_t max_request_tokens = int64_t(1) << 18;
  // The same summed over the whole (non-streamed) responses being built at once; beyond it a new one gets 503.
  int64_t max_buffered_tokens = int64_t(1) << 20;
  int num_workers = 2;                   // threads preparing requests (parsing, templates, tokenization)
  size_t max_queued_requests = 256;      // waiting for a worker; beyond it a new one gets 503
  Pooling pooling = Pooling::kLast;      // how /v1/embeddings pools (the model's metadata, or --pooling)
  MatryoshkaDimensions matryoshka;       // the shorter `dimensions` it gives (the model's metadata, or the flag)
  std::optional<TokenId> embedding_eos;  // appended to each text input of /v1/embeddings (the tokenizer adds EOS)
  RerankFraming rerank_framing;          // how /v1/rerank frames a query and a document (template or vocabulary)
  // Why the engine computes no prompt logprobs (EngineConfig::prompt_logits off), for the 400 of a request that
  // asks for them; empty: it says only that they are off.
  std::string prompt_logprobs_off;
  // What Ollama's /api/tags, /api/show and /api/ps say of the model (name, context and capabilities are filled
  // by the server).
  OllamaModelFacts ollama;
  std::string model_path;  // llama-server's /props: the model file
  std::string eos_text;    // and the EOS token's text
  FimTokens fim;           // llama-server's /infill: the model's fill-in-the-middle tokens
};

// An error in the shape the client of `path` reads: Anthropic's on /v1/messages, Ollama's on /api/, else OpenAI's.
HttpResponse error_response_for(std::string_view path, const ApiError& error);
// The API's routes, which need the API key when the server has one (not /health, /metrics, /, /version).
bool is_api_route(std::string_view path);

class ApiServer {
 public:
  // Borrows `ids` (shared by every model of one server, so that ids stay unique across them).
  ApiServer(Engine& engine, const Tokenizer& tokenizer, RequestLog& log, IdGenerator& ids, ApiServerOptions options);
  ~ApiServer();

  void handle(std::shared_ptr<HttpExchange> exchange);
  // A request the HTTP layer answered itself (413, 431, malformed, refused preflight): counted and logged.
  void record_refused(const RefusedRequest& refused);
  // The body of an error the HTTP layer answers itself (HttpServerOptions::error_response), in the shape the
  // client of `path` reads (Anthropic's on /v1/messages, OpenAI's elsewhere).
  static HttpResponse http_layer_error(int status, std::string message, std::string_view path);
  // The 401 of a request to `path` without the right key, when `api_key` is set and the path asks for one.
  static std::optional<ApiError> authorization_error(const HttpRequest& request,
                                                     const std::optional<std::string>& api_key);
  // No request, job or compile in flight (a ModelSet may unload the model).
  bool idle() const;
  std::string render_metrics() const;  // /metrics: the Prometheus text of this model
  OllamaModelFacts ollama_facts() const;
  const ApiServerOptions& options() const { return options_; }
  // Periodic: deadlines of running requests, progress of a drain. Any thread.
  void tick();
  // SIGTERM / SIGINT: /health turns 503, new requests get 503, running ones get drain_timeout to finish.
  // A second call ends them at once.
  void begin_shutdown();
  // True once a shutdown was asked for and every request has ended (those still being prepared included).
  bool shutdown_complete() const;
  int32_t num_active_jobs() const;

 private:
  void route(std::shared_ptr<HttpExchange>& ex);
  // Every response but a CompletionJob's goes through here: counted, and logged (one line per request).
  void reply(HttpExchange& ex, HttpResponse response, const std::string& finish = "");
  void reply_error(HttpExchange& ex, const ApiError& error);
  void reply_internal_error(HttpExchange& ex, const std::string& what);
  // Runs `work` on a worker; a full queue is a 503, a request whose deadline passed while it waited a 408, and
  // one that arrives during a drain a 503. `received_us` (this server's clock) starts the request's deadline.
  void run_on_worker(std::shared_ptr<HttpExchange> ex, std::function<void(int64_t received_us)> work);
  enum class CompletionApi { kCompletions, kChat, kResponses, kAnthropicMessages, kOllamaChat, kOllamaGenerate,
                               kLlamaCompletion, kLlamaInfill };
  // A completion request of any protocol: read by its protocol's read_* function, then validate_completion, then
  // (its constraint compiled) launch_completion.
  void handle_completion(std::shared_ptr<HttpExchange>& ex, CompletionApi api, int64_t received_us);
  // One completion request as its job runs it: the parameters with the limits applied and the defaults filled
  // in, its prompts tokenized, its writer; its constraint (params.constraint) compiles after validation.
  struct PreparedCompletion {
    CompletionApi api = CompletionApi::kCompletions;
    int64_t received_us = 0;
    RequestLimits limits;  // the server's, with what the request may lower (Ollama's num_ctx)
    DefaultMaxTokens default_max_tokens = DefaultMaxTokens::kRestOfContext;  // the protocol's, when it gives none
    int64_t num_prompts = 0;
    CompletionParams params;
    std::vector<JobPrompt> prompts;
    int64_t buffered_tokens = 0;                // what a whole (non-streamed) response holds, as bounded
    std::unique_ptr<ResponseWriter> writer;     // the protocol's shapes
    nlohmann::ordered_json responses_echo;      // the settings a Responses object repeats
    std::string ollama_model;                   // Ollama's APIs: the model's name as the client gave it
    bool llama_return_tokens = false;           // llama-server's /completion: return_tokens
    int32_t llama_n_probs = 0;                  // and n_probs
    std::string infill_prefix, infill_suffix;   // llama-server's /infill: the text around the middle
  };
  // One function per protocol: its body into `out` (parameters, what its writer needs, its default max_tokens,
  // the limits it may lower). False when it answered already (an error, Ollama's load call).
  bool read_openai(HttpExchange& ex, CompletionApi api, PreparedCompletion* out);  // completions and chat
  bool read_responses(HttpExchange& ex, PreparedCompletion* out);
  bool read_anthropic(HttpExchange& ex, PreparedCompletion* out);
  bool read_ollama(HttpExchange& ex, CompletionApi api, PreparedCompletion* out);     // /api/chat, /api/generate
  bool read_llama(HttpExchange& ex, CompletionApi api, PreparedCompletion* out);      // /completion, /infill
  // What every protocol's request goes through: the model, the engine's capabilities, the prompts (templated,
  // tokenized) and each limit of request_limits.h, once; a forced tool call's constraint; the writer.
  std::optional<ApiError> validate_completion(PreparedCompletion& prepared) const;
  std::unique_ptr<ResponseWriter> make_writer(const PreparedCompletion& prepared) const;
  RequestLimits request_limits() const;  // this server's
  // A constraint not in the grammar cache is compiled on the compile thread, so that a slow compile holds no
  // request worker; the compile stops at the request's deadline (408), its client's leaving and shutdown (503).
  void compile_then_launch(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared);
  void finish_compile(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared,
                      Result<std::shared_ptr<const grammar::CompiledGrammar>> compiled);
  // Starts its job (any thread).
  void launch_completion(const std::shared_ptr<HttpExchange>& ex, PreparedCompletion prepared,
                         std::shared_ptr<const grammar::CompiledGrammar> constraint);
  JobContext job_context();  // what every job borrows (--tool-call-parser's format, else the template's)
  // /v1/embeddings, Ollama's /api/embed and /api/embeddings, or llama-server's /embedding: `api` says whose.
  void handle_embeddings(std::shared_ptr<HttpExchange>& ex, int64_t received_us, EmbeddingParams::Api api);
  // /v1/rerank, /rerank, /v1/reranking, /reranking: a model without a classification head answers 400.
  void handle_rerank(std::shared_ptr<HttpExchange>& ex, int64_t received_us);
  // Ollama's GET /api/tags, /api/ps, /api/version and POST /api/show; false when `path` is none of them.
  bool handle_ollama_info(HttpExchange& ex, const std::string& path);
  LlamaServerFacts llama_facts() const;
  // Starts a job on its exchange's strand and tracks it (deadline, drain, buffered tokens) until it ends.
  // `make_job` builds it with the callback it must call when it ends; `start` runs on the strand and says
  // whether the job is running (false: it answered already).
  void launch_job(const std::shared_ptr<HttpExchange>& ex, int64_t received_us, int64_t buffered_tokens,
                  const std::function<std::shared_ptr<ServerJob>(std::function<void()> on_done)>& make_job,
                  std::function<bool(ServerJob&)> start);
  void handle_tokenize(HttpExchange& ex, int64_t received_us);
  // Anthropic's /v1/messages/count_tokens: the prompt's tokens through the template, as /v1/messages counts them.
  void handle_count_tokens(HttpExchange& ex, int64_t received_us);
  void handle_apply_template(HttpExchange& ex, int64_t received_us);
  void handle_detokenize(HttpExchange& ex);
  HttpResponse models_response() const;
  // The chat's prompt tokens through the template: a template error (raise_exception) or a render over its
  // budget is a 400; a render still running at the request's deadline stops with a 408, at shutdown with a 503.
  // `opens_reasoning` (when given): whether the rendered prompt leaves the model inside its reasoning.
  std::variant<std::vector<TokenId>, ApiError> chat_prompt_tokens(const CompletionParams& params, int64_t received_us,
                                                                  bool* opens_reasoning = nullptr) const;
  // The same as text, before tokenization (llama-server's /apply-template).
  std::variant<std::string, ApiError> chat_prompt_text(const CompletionParams& params, int64_t received_us) const;
  // Ollama's think onto the template's enable_thinking / reasoning_effort; Ollama's "does not support thinking"
  // where the model shows no reasoning syntax.
  std::optional<ApiError> apply_ollama_think(const OllamaRequest& request, CompletionParams* params) const;
  // The reasoning syntax a chat request's output is read with (its reasoning_format, else the server's).
  ReasoningSyntax reasoning_syntax(const CompletionParams& params) const;
  void expire_all(const ApiError& why);
  int64_t now_us() const;
  std::optional<ApiError> deadline_error(int64_t received_us) const;  // the 408 once the deadline has passed
  ApiError timeout_error() const;

  Engine& engine_;
  const Tokenizer& tokenizer_;
  RequestLog& log_;
  IdGenerator& ids_;
  ApiServerOptions options_;
  ServingMetrics metrics_;
  // Requests' output constraints, compiled for the tokenizer on the request workers (off the engine's thread) and
  // cached by spec: every request with the same schema shares one compiled grammar and its token masks.
  grammar::GrammarCompiler grammar_compiler_;
  int64_t created_ = 0;
  std::string started_at_;  // the same, as Ollama's timestamps

  mutable std::mutex mutex_;
  uint64_t next_job_id_ = 1;
  struct ActiveJob {
    std::shared_ptr<ServerJob> job;
    int64_t deadline_us = -1;  // this server's clock (now_us); -1 = none
    bool expired = false;
    int64_t buffered_tokens = 0;  // counted in buffered_tokens_ while the job runs (non-streamed responses)
  };
  std::unordered_map<uint64_t, ActiveJob> jobs_;
  bool draining_ = false;
  // Set with draining_: chat template renders and grammar compiles in progress give up.
  std::atomic<bool> stop_preparing_{false};
  int64_t drain_deadline_us_ = 0;
  bool drain_cut_ = false;       // the drain timeout passed and the remaining requests were ended
  int64_t buffered_tokens_ = 0;  // of the whole responses being built (ActiveJob::buffered_tokens)
  int32_t num_preparing_ = 0;    // requests posted to the workers and not yet started or answered
  int64_t start_ns_ = 0;         // now_us's origin

  // Last: destroyed first (the request workers, then the compile thread they post to), so no worker runs while
  // the members above go.
  // One thread compiling constraints the grammar cache lacks (compile_then_launch).
  static constexpr size_t kMaxQueuedCompiles = 64;
  std::unique_ptr<RequestWorkers> compile_workers_;
  std::unique_ptr<RequestWorkers> workers_;
};

}  // namespace pagoda::server
