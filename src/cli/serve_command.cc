// `pagoda serve [-m MODEL] [--add-model PATH[=NAME]]... [--keep-alive D] [--models-max N] [--host H] [--port P]
// [--models-dir DIR] [--api-key KEY] [--served-model-name NAME] [--chat-template T]
// [--request-timeout S] [--drain-timeout S] [--log-format text|json] [--pooling last|mean|cls]
// [--matryoshka-dimensions any|none|N,N...] [engine flags] [llama-server's flag spellings]`:
// argument parsing and the start-up/shutdown sequence; the server itself is src/server.
#include "cli/serve_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "chat/reasoning_parser.h"
#include "chat/template_selection.h"
#include "chat/tool_call_parser.h"
#include "cli/common_options.h"
#include "cli/engine_options.h"
#include "cli/engine_setup.h"
#include "cli/llama_server_flags.h"
#include "cli/matryoshka_option.h"
#include "cli/ollama_model_facts.h"
#include "cli/pooling_option.h"
#include "engine/engine.h"
#include "kv/kv_storage.h"
#include "loader/chat_metadata.h"
#include "server/api_server.h"
#include "server/http_server.h"
#include "server/model_router.h"
#include "server/model_set.h"
#include "server/ollama_protocol.h"

namespace pagoda::cli {
namespace {

// The most a step's prompt-logits rows may take for serve to offer prompt logprobs (64 MiB for a 128k
// vocabulary at the default 128 tokens a step; 2048 tokens a step still fit).
constexpr int64_t kMaxPromptLogitsBytes = int64_t(1) << 30;

struct ServeOptions {
  CommonOptions common;
  EngineCliOptions engine;
  server::HttpServerOptions http;
  std::optional<std::string> api_key;
  std::optional<std::string> served_model_name;
  std::optional<std::string> chat_template;
  std::optional<std::string> chat_template_file;
  bool merge_system_message = false;
  std::string tool_call_parser = "auto";
  std::string reasoning_format = "auto";
  double request_timeout_s = 0.0;
  double drain_timeout_s = 30.0;
  double read_timeout_s = 10.0;
  std::string log_format = "text";
  int64_t max_request_tokens = int64_t(1) << 18;
  int64_t max_buffered_tokens = int64_t(1) << 20;
  std::optional<std::string> pooling;
  std::optional<std::string> matryoshka_dimensions;
  LlamaServerFlags llama_server;            // llama-server's spellings
  std::vector<std::string> add_models;      // --add-model PATH[=NAME]: further models served beside the first
  std::optional<std::string> models_dir;    // --models-dir DIR: every GGUF in it, served by its file's stem
  std::optional<std::string> keep_alive;    // --keep-alive: how long an idle model stays loaded (several models)
  std::optional<int32_t> models_max;        // --models-max: models loaded at once at most (several models)
  std::optional<double> models_memory_gib;  // --models-memory: what the loaded models may take, GiB (several models)
};

// A model of --add-model PATH[=NAME] (named by its file's stem when no name is given).
Result<server::ModelSpec> parse_added_model(const std::string& arg) {
  server::ModelSpec spec;
  const size_t eq = arg.rfind('=');
  spec.source = eq == std::string::npos ? arg : arg.substr(0, eq);
  spec.name = eq == std::string::npos ? std::filesystem::path(spec.source).stem().string() : arg.substr(eq + 1);
  if (spec.source.empty() || spec.name.empty())
    return make_error("invalid option: --add-model takes PATH or PATH=NAME, got '" + arg + "'");
  std::error_code ec;
  const auto size = std::filesystem::file_size(spec.source, ec);
  if (ec) return make_error("invalid option: --add-model " + spec.source + ": " + ec.message());
  spec.file_bytes = int64_t(size);
  return spec;
}

// --models-dir: its GGUF files in name order (of a split set, the first part only).
Result<std::vector<std::string>> models_in_dir(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".gguf") continue;
    const size_t of = name.find("-of-");
    if (of != std::string::npos && of >= 5 && name.substr(of - 5, 5) != "00001") continue;
    files.push_back(entry.path().string());
  }
  if (ec) return make_error("invalid option: --models-dir " + dir + ": " + ec.message());
  if (files.empty()) return make_error("invalid option: --models-dir " + dir + " holds no .gguf file");
  std::sort(files.begin(), files.end());
  return files;
}

// One model's engine and ApiServer over a prepared (loaded) model. `first`: the flags that describe a model
// (--served-model-name, --chat-template, --chat-template-file, --pooling, --matryoshka-dimensions) apply to it;
// the other models take these from their files.
Result<std::shared_ptr<server::ServedModel>> build_served_model(const ServeOptions& o,
                                                                std::shared_ptr<PreparedEngine> p,
                                                                const std::string& name, bool first,
                                                                server::RequestLog& log, server::IdGenerator& ids) {
  const LoadedModel& loaded = p->loaded;
  const ChatMetadata meta = read_chat_metadata(loaded);
  ChatTemplateSources sources;
  if (first) {
    sources.flag = o.chat_template;
    if (o.chat_template_file) {
      PAGODA_ASSIGN_OR_RETURN(sources.file_template, read_text_file(*o.chat_template_file));
      sources.file_name = *o.chat_template_file;
    }
  }
  sources.model_template = meta.chat_template;
  sources.bos_text = meta.bos_text;
  sources.eos_text = meta.eos_text;
  PAGODA_ASSIGN_OR_RETURN(SelectedChatTemplate chat, select_chat_template(sources));

  // /v1/embeddings: --pooling, else the GGUF's `<arch>.pooling_type`, else last-token pooling (decoder models).
  PAGODA_ASSIGN_OR_RETURN(PoolingChoice pooling, choose_pooling(first ? o.pooling : std::nullopt, loaded));
  PAGODA_ASSIGN_OR_RETURN(MatryoshkaChoice matryoshka,
                          choose_matryoshka(first ? o.matryoshka_dimensions : std::nullopt, loaded));
  // Pooled hidden states do not cross --tp/--pp ranks: there /v1/embeddings answers 400.
  p->resolved.config.pooling = !p->parallel.active();
  // Prompt logprobs (echo with logprobs, prompt_logprobs): the workspace then holds a logits row per token of a
  // step, computed only for the requests that ask. Not over ranks, nor where those rows would be a large fixed
  // cost (a huge vocabulary, no chunked prefill): there such requests are 400s and start-up says why.
  const int64_t prompt_logits_bytes =
      int64_t(step_token_capacity(p->resolved.config)) * loaded.model->config().vocab_size * int64_t(sizeof(float));
  std::string prompt_logprobs_off;
  if (p->parallel.active())
    prompt_logprobs_off = "the model runs over --tp/--pp ranks";
  else if (prompt_logits_bytes > kMaxPromptLogitsBytes)
    prompt_logprobs_off = fmt::format(
        "a step's logits rows would take {} MiB (more than {} MiB): lower --max-batched-tokens or keep chunked "
        "prefill on",
        prompt_logits_bytes >> 20, kMaxPromptLogitsBytes >> 20);
  p->resolved.config.prompt_logits = prompt_logprobs_off.empty();
  auto served = std::make_shared<server::ServedModel>();
  PAGODA_ASSIGN_OR_RETURN(served->engine, Engine::create(*loaded.model, *loaded.tokenizer, p->resolved.config));
  const EngineConfig& ec = p->resolved.config;

  server::ApiServerOptions api;
  api.model_name = name;
  api.api_key = o.api_key;
  api.chat_template =
      o.merge_system_message ? chat.chat_template.with_system_merged_into_first_user() : chat.chat_template;
  // A template that refuses a system role (Gemma's raise_exception) would fail every request that has one.
  const std::vector<ChatMessage> probe{{"system", "s"}, {"user", "u"}};
  const bool refuses_system = !api.chat_template.try_render(probe, true).ok();
  if (o.tool_call_parser != "auto") api.tool_call_format = parse_tool_call_format(o.tool_call_parser);
  api.reasoning_format = parse_reasoning_format(o.reasoning_format).value_or(ReasoningFormat::kAuto);
  api.bos_text = meta.bos_text;
  api.max_seq_len = ec.max_seq_len;
  api.max_model_len = ec.max_seq_len;
  api.request_timeout = std::chrono::milliseconds(int64_t(o.request_timeout_s * 1000));
  api.drain_timeout = std::chrono::milliseconds(int64_t(o.drain_timeout_s * 1000));
  api.max_request_tokens = o.max_request_tokens;
  api.max_buffered_tokens = o.max_buffered_tokens;
  // A connection has at most one request being prepared (HTTP/1.1 answers in order), so a queue as deep as the
  // connection cap never refuses what the cap admitted; the bodies it holds are bounded by the body budget.
  api.max_queued_requests = size_t(o.http.max_connections);
  if (meta.add_bos) api.add_bos = *meta.add_bos;
  api.pooling = pooling.pooling;
  api.matryoshka = matryoshka.dimensions;
  api.embedding_eos = embedding_eos(loaded);
  api.rerank_framing = rerank_framing(loaded);
  api.prompt_logprobs_off = prompt_logprobs_off;
  api.ollama = ollama_model_facts(loaded, meta);
  api.model_path = loaded.source;
  api.eos_text = meta.eos_text;
  api.fim = fim_tokens(loaded);
  api.cache.block_size = ec.kv.block_size;
  api.cache.cache_dtype = kv_types_name(ec.kv_types);
  api.cache.cache_type_k = kv_dtype_name(ec.kv_types.k);
  api.cache.cache_type_v = kv_dtype_name(ec.kv_types.v);
  api.cache.kv_bytes_per_token = KvStorage::bytes_per_token(loaded.model->config().kv_shape(), ec.kv_types);
  api.cache.enable_prefix_caching = ec.kv.enable_prefix_cache;
  api.cache.num_gpu_blocks = ec.kv.num_blocks;

  std::fprintf(stderr, "pagoda: model %s (%s), served as '%s', %d threads\n", loaded.source.c_str(),
               api.model_name.c_str(), api.model_name.c_str(), served->engine->num_threads());
  if (refuses_system)
    std::fprintf(stderr,
                 "pagoda: note: the chat template refuses a system message; requests with one get its error (400) "
                 "unless --merge-system-message puts it at the start of the first user message\n");
  std::fprintf(
      stderr, "pagoda: chat template: %s%s; tool calls parsed as %s%s\n", chat.source.c_str(),
      o.merge_system_message ? ", system message merged into the first user message" : "",
      std::string(tool_call_format_name(api.tool_call_format.value_or(api.chat_template.tool_call_format()))).c_str(),
      api.tool_call_format ? " (--tool-call-parser)" : "");
  {
    const ReasoningSyntax syntax = reasoning_syntax_for(api.reasoning_format, api.chat_template.reasoning_syntax());
    std::fprintf(stderr, "pagoda: reasoning: %s (--reasoning-format %s; the template shows %s)%s\n",
                 syntax == ReasoningSyntax::kNone ? "left in the content"
                 : syntax == ReasoningSyntax::kHarmony
                     ? "harmony's analysis channel as reasoning_content, its commentary calls as tool_calls"
                     : "<think>...</think> as reasoning_content",
                 o.reasoning_format.c_str(),
                 std::string(reasoning_syntax_name(api.chat_template.reasoning_syntax())).c_str(),
                 syntax == ReasoningSyntax::kNone ? ""
                                                  : "; Anthropic's thinking.budget_tokens is not enforced (max_tokens "
                                                    "bounds the reply)");
  }
  if (!prompt_logprobs_off.empty() && !p->parallel.active())
    std::fprintf(stderr, "pagoda: note: no prompt logprobs (echo with logprobs, prompt_logprobs): %s\n",
                 prompt_logprobs_off.c_str());
  if (ec.pooling)
    std::fprintf(stderr, "pagoda: embeddings: %s pooling (%s)%s; shorter dimensions: %s (%s)\n",
                 std::string(pooling_name(pooling.pooling)).c_str(), pooling.source.c_str(),
                 api.embedding_eos ? ", each text ending with EOS (tokenizer.ggml.add_eos_token)" : "",
                 server::describe_matryoshka_dimensions(matryoshka.dimensions, loaded.model->config().dim).c_str(),
                 matryoshka.source.c_str());
  if (ec.pooling && served->engine->num_rank_outputs() > 0)
    std::fprintf(stderr, "pagoda: rerank: /v1/rerank scores each query/document pair with the classification head%s%s\n",
                 served->engine->rank_reads_last_token()
                     ? " (the last token's row through cls.output, softmax over its outputs)"
                     : "",
                 api.rerank_framing.prompt_template.empty() ? "" : ", framed by tokenizer.chat_template.rerank");
  if (ec.pooling && served->engine->rank_reads_last_token() && served->engine->num_rank_outputs() == 1)
    std::fprintf(stderr, "pagoda: warning: the reranker's cls.output has one row: every score is 1, as llama.cpp's "
                         "softmax over one output gives\n");
  std::fflush(stderr);
  served->api = std::make_unique<server::ApiServer>(*served->engine, *loaded.tokenizer, log, ids, std::move(api));
  served->files = std::move(p);
  return served;
}

int serve(ServeOptions& o) {
  server::LogFormat log_format;
  if (o.log_format == "text") {
    log_format = server::LogFormat::kText;
  } else if (o.log_format == "json") {
    log_format = server::LogFormat::kJson;
  } else {
    return report_error("invalid option: --log-format must be text or json, got '" + o.log_format + "'");
  }
  if (o.request_timeout_s < 0) return report_error("invalid option: --request-timeout must be >= 0 (0 = none)");
  if (!(o.read_timeout_s > 0)) return report_error("invalid option: --read-timeout must be > 0");
  o.http.read_timeout = std::chrono::milliseconds(int64_t(o.read_timeout_s * 1000));
  if (o.drain_timeout_s < 0) return report_error("invalid option: --drain-timeout must be >= 0");
  if (o.http.num_io_threads < 1) return report_error("invalid option: --io-threads must be at least 1");
  if (o.http.max_stream_pending_bytes < 1024)
    return report_error("invalid option: --max-stream-buffer must be at least 1024 bytes");
  if (o.http.max_connections < 1) return report_error("invalid option: --max-connections must be at least 1");
  if (o.http.max_connections_per_address < 1)
    return report_error("invalid option: --max-connections-per-address must be at least 1");
  if (o.max_request_tokens < 1) return report_error("invalid option: --max-request-tokens must be at least 1");
  if (o.max_buffered_tokens < o.max_request_tokens)
    return report_error("invalid option: --max-buffered-tokens must be at least --max-request-tokens");
  if (o.api_key && o.api_key->empty()) return report_error("invalid option: --api-key must not be empty");
  if (o.tool_call_parser != "auto" && !parse_tool_call_format(o.tool_call_parser))
    return report_error("invalid option: --tool-call-parser must be auto, hermes, mistral or llama3_json, got '" +
                        o.tool_call_parser + "'");
  if (!parse_reasoning_format(o.reasoning_format))
    return report_error("invalid option: --reasoning-format must be auto, none or deepseek, got '" +
                        o.reasoning_format + "'");

  // The models served: the first (-m, -hf, the config's or the bundled one) and each --add-model, then each GGUF of
  // --models-dir (the first of them is the first model when nothing else names one).
  if (o.models_dir) {
    Result<std::vector<std::string>> files = models_in_dir(*o.models_dir);
    if (!files.ok()) return report_error(files.error());
    size_t next = 0;
    if (!o.common.model && o.common.hf_repo.empty() && o.common.config_path.empty()) {
      o.common.model = (*files)[next++];
      if (!o.served_model_name) o.served_model_name = std::filesystem::path(*o.common.model).stem().string();
    }
    for (; next < files->size(); ++next) o.add_models.push_back((*files)[next]);
  }
  std::vector<server::ModelSpec> specs(1);
  for (const std::string& arg : o.add_models) {
    Result<server::ModelSpec> spec = parse_added_model(arg);
    if (!spec.ok()) return report_error(spec.error());
    specs.push_back(std::move(*spec));
  }
  const bool several = specs.size() > 1;
  server::ModelSetOptions set_options;
  // One model is loaded for the server's life, as ever; several follow Ollama's and llama-server's policies.
  set_options.keep_alive = std::chrono::milliseconds(-1);
  if (o.keep_alive) {
    if (!several)
      return report_error(
          "invalid option: --keep-alive applies to a server of several models (--add-model, --models-dir)");
    const std::optional<std::chrono::milliseconds> keep_alive = server::parse_ollama_duration(*o.keep_alive);
    if (!keep_alive)
      return report_error("invalid option: --keep-alive must be a duration such as 5m, 30s, 1h or -1 (forever), got '" +
                          *o.keep_alive + "'");
    set_options.keep_alive = *keep_alive;
  } else if (several) {
    set_options.keep_alive = std::chrono::minutes(5);  // Ollama's OLLAMA_KEEP_ALIVE default
  }
  if (o.models_max) {
    if (!several)
      return report_error(
          "invalid option: --models-max applies to a server of several models (--add-model, --models-dir)");
    if (*o.models_max < 0) return report_error("invalid option: --models-max must be >= 0 (0: no limit)");
    set_options.max_loaded = *o.models_max;
  } else if (several) {
    set_options.max_loaded = 4;  // llama-server's --models-max default
  }
  if (o.models_memory_gib) {
    if (!several)
      return report_error(
          "invalid option: --models-memory applies to a server of several models (--add-model, --models-dir)");
    if (!(*o.models_memory_gib > 0.0) || *o.models_memory_gib > 1e6)
      return report_error("invalid option: --models-memory must be a positive number of GiB");
    set_options.max_bytes = int64_t(*o.models_memory_gib * double(int64_t(1) << 30));
  }
  if (several && o.engine.spec.method == "draft")
    return report_error("invalid option: --spec draft serves one model; it cannot be combined with --add-model");

  Result<std::vector<std::string>> llama_server_lines = apply_llama_server_flags(o.llama_server, o.common, o.engine);
  if (!llama_server_lines.ok()) return report_error(llama_server_lines.error());
  for (const std::string& line : *llama_server_lines) std::fprintf(stderr, "pagoda: %s\n", line.c_str());
  Result<PreparedEngine> first = prepare_engine(o.common, o.engine);
  if (!first.ok()) return report_error(first.error());
  if (first->followed) return 0;  // a rank of --tp/--pp other than 0: rank 0 ran the command
  if (several && first->parallel.active())
    return report_error(
        "invalid option: --tp/--pp split one model over ranks; they cannot be combined with --add-model");
  specs[0].name = o.served_model_name.value_or(read_chat_metadata(first->loaded).name);
  specs[0].source = first->loaded.source;
  for (size_t i = 1; i < specs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (specs[i].name == specs[j].name)
        return report_error("invalid option: two models are served as '" + specs[i].name +
                            "'; name one with --add-model PATH=NAME");
  for (const server::ModelSpec& spec : specs)
    if (set_options.max_bytes > 0 && spec.file_bytes > set_options.max_bytes)
      return report_error(
          fmt::format("invalid option: model '{}' ({:.2f} GiB) cannot fit in --models-memory {:.2f} GiB", spec.name,
                      double(spec.file_bytes) / double(int64_t(1) << 30),
                      double(set_options.max_bytes) / double(int64_t(1) << 30)));

  server::RequestLog log(stderr, log_format);
  server::IdGenerator ids;  // one for every model this server serves
  // The first model's load at start-up is the one prepared above; a reload after an unload prepares it again.
  auto prepared_first = std::make_shared<PreparedEngine>(std::move(*first));
  auto loader = [&o, &log, &ids, &prepared_first, first_name = specs[0].name](
                    const server::ModelSpec& spec) -> Result<std::shared_ptr<server::ServedModel>> {
    const bool is_first = spec.name == first_name;
    std::shared_ptr<PreparedEngine> p;
    if (is_first && prepared_first) {
      p = std::move(prepared_first);
      prepared_first = nullptr;
    } else {
      CommonOptions common = o.common;
      if (!is_first) {
        common.model = spec.source;
        common.hf_repo.clear();
        common.hf_file.clear();
      }
      std::fprintf(stderr, "pagoda: loading model '%s' (%s)\n", spec.name.c_str(), spec.source.c_str());
      PAGODA_ASSIGN_OR_RETURN(PreparedEngine prepared, prepare_engine(common, o.engine));
      p = std::make_shared<PreparedEngine>(std::move(prepared));
    }
    const int64_t file_bytes = spec.file_bytes;
    PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<server::ServedModel> served,
                            build_served_model(o, std::move(p), spec.name, is_first, log, ids));
    served->bytes = file_bytes + served->engine->kv_total_bytes() + served->engine->state_total_bytes();
    return served;
  };
  set_options.note = [&log](const std::string& line) { log.message(line); };
  server::ModelSet models(specs, loader, set_options);
  if (Status s = models.load_now(0); !s.ok()) return report_error(s.message());
  server::ModelRouter router(models, log, o.api_key);

  std::unique_ptr<server::HttpServer> http;
  o.http.error_response = [](int status, std::string message, std::string_view path) {
    return server::ApiServer::http_layer_error(status, std::move(message), path);
  };
  o.http.log_internal_error = [&log](const std::string& what) { log.message("internal error: " + what); };
  o.http.log_refused = [&router](const server::RefusedRequest& r) { router.record_refused(r); };
  Result<std::unique_ptr<server::HttpServer>> created = server::HttpServer::create(
      o.http, [&router](std::shared_ptr<server::HttpExchange> ex) { router.handle(std::move(ex)); });
  if (!created.ok()) return report_error(created.error());
  http = std::move(*created);

  std::signal(SIGPIPE, SIG_IGN);  // a client that vanished mid-write is an error code, not a signal
  server::HttpServer* h = http.get();
  http->on_signals({SIGINT, SIGTERM}, [&router](int) { router.begin_shutdown(); });
  http->every(std::chrono::milliseconds(10), [&router, h] {
    router.tick();
    if (router.shutdown_complete()) h->stop();
  });
  if (several) {
    std::string names;
    for (const server::ModelSpec& s : specs) names += (names.empty() ? "'" : ", '") + s.name + "'";
    std::fprintf(stderr,
                 "pagoda: serving %zu models (%s; the first for requests that name none), each loaded on first use; "
                 "unloaded after %s idle (--keep-alive, or a request's keep_alive); at most %s loaded at once "
                 "(--models-max)%s; flags that describe a model (--served-model-name, --chat-template, "
                 "--chat-template-file, --pooling, --matryoshka-dimensions) apply to the first\n",
                 specs.size(), names.c_str(),
                 set_options.keep_alive.count() < 0
                     ? "never"
                     : fmt::format("{:.3g} s", double(set_options.keep_alive.count()) / 1e3).c_str(),
                 set_options.max_loaded > 0 ? std::to_string(set_options.max_loaded).c_str() : "any number",
                 set_options.max_bytes > 0
                     ? fmt::format(", taking at most {:.3g} GiB together, each its file and its KV and state pools "
                                   "(--models-memory)",
                                   double(set_options.max_bytes) / double(int64_t(1) << 30))
                           .c_str()
                     : "");
  }
  std::fprintf(stderr,
               "pagoda: listening on http://%s:%d (OpenAI API at /v1, Ollama's at /api, chat page at /, metrics at "
               "/metrics)%s\n",
               o.http.host.c_str(), http->port(), o.api_key ? ", API key required" : "");
  std::fflush(stderr);
  http->run();
  log.message("stopped");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (streaming, metrics, chat page)");
  add_common_options(*cmd, o->common, /*with_model=*/true, /*splits_over_ranks=*/true);
  add_rope_scaling_options(*cmd, o->common);
  add_engine_options(*cmd, o->engine);
  cmd->add_option("--host", o->http.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", o->http.port, "port to listen on (0 = any free port)")->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "require 'Authorization: Bearer KEY' on /v1 and /tokenize");
  cmd->add_option("--served-model-name", o->served_model_name, "the model's name in the API (default: the GGUF's)");
  cmd->add_option("--chat-template", o->chat_template,
                  "plain, chatml, llama2 or llama3 (default: recognised from the GGUF, else plain)");
  cmd->add_option("--chat-template-file", o->chat_template_file,
                  "a Jinja chat template to use instead of the model's (transformers' semantics)");
  cmd->add_flag("--merge-system-message", o->merge_system_message,
                "render a leading system message as the start of the first user message (for templates that "
                "refuse a system role, as llama.cpp does)");
  cmd->add_option("--tool-call-parser", o->tool_call_parser,
                  "how the model writes tool calls: hermes (<tool_call>), mistral ([TOOL_CALLS]), llama3_json, or "
                  "auto: from the chat template's markers, hermes when it shows none")
      ->capture_default_str();
  cmd->add_option("--reasoning-format", o->reasoning_format,
                  "where a reasoning model's thinking goes: auto (reasoning_content where the chat template shows "
                  "<think> tags or harmony's channels), deepseek (reasoning_content always, <think> tags when the "
                  "template shows none), none (left in the content)")
      ->capture_default_str();
  cmd->add_option("--request-timeout", o->request_timeout_s, "seconds a request may take, queue included (0 = none)")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o->drain_timeout_s, "on SIGTERM/SIGINT, seconds running requests get to finish")
      ->capture_default_str();
  cmd->add_option("--read-timeout", o->read_timeout_s,
                  "seconds a client gets to send a whole request (against slowloris)")
      ->capture_default_str();
  cmd->add_option("--log-format", o->log_format, "request log lines: text or json")->capture_default_str();
  cmd->add_option("--max-connections", o->http.max_connections, "open connections at most")->capture_default_str();
  cmd->add_option("--max-connections-per-address", o->http.max_connections_per_address,
                  "open connections from one client address at most (a proxy in front counts as one address)")
      ->capture_default_str();
  cmd->add_option("--max-request-tokens", o->max_request_tokens,
                  "output tokens one request may ask for, over its prompts and choices, each logprob alternative "
                  "counting as a token, scored prompt tokens (echo with logprobs, prompt_logprobs) too (beyond: 400; "
                  "an implied max_tokens is lowered to fit)")
      ->capture_default_str();
  cmd->add_option("--max-buffered-tokens", o->max_buffered_tokens,
                  "the same over every whole (non-streamed) response being built at once (beyond: 503)")
      ->capture_default_str();
  cmd->add_option("--io-threads", o->http.num_io_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--max-stream-buffer", o->http.max_stream_pending_bytes,
                  "bytes queued for a slow streaming reader before its stream is cut")
      ->capture_default_str();
  cmd->add_option("--max-body", o->http.max_body_bytes, "request body bytes at most (beyond: 413)")
      ->capture_default_str();
  cmd->add_option("--pooling", o->pooling,
                  "how /v1/embeddings pools a prompt's final hidden states: last, mean or cls (default: the GGUF's "
                  "<arch>.pooling_type, else last)");
  cmd->add_option(kMatryoshkaFlag, o->matryoshka_dimensions,
                  std::string(kMatryoshkaFlagHelp) + "; /v1/embeddings' `dimensions` may ask for these");
  cmd->add_option("--allowed-origins", o->http.allowed_origins,
                  "browser origins allowed to call the API (CORS), e.g. https://app.example.com, or * for any "
                  "(default: none); several separated by commas or given more than once")
      ->delimiter(',');
  cmd->add_option("--add-model", o->add_models,
                  "PATH[=NAME]: a further GGUF model served beside the first (named by its file's stem unless NAME "
                  "is given), picked by a request's `model`, loaded on first use; may be given more than once");
  cmd->add_option("--models-dir", o->models_dir,
                  "serve every .gguf in DIR too, each named by its file's stem (the first of them is the first "
                  "model when -m, -hf and --config name none)");
  cmd->add_option("--keep-alive", o->keep_alive,
                  "with --add-model: how long a model stays loaded after its last request, as Ollama's "
                  "OLLAMA_KEEP_ALIVE (5m, 30s, 0, -1 = forever; default 5m); an Ollama request's keep_alive sets "
                  "its model's");
  cmd->add_option("--models-max", o->models_max,
                  "with --add-model: models loaded at once at most; loading one more first unloads the least "
                  "recently used idle one (default 4, 0 = no limit)");
  cmd->add_option("--models-memory", o->models_memory_gib,
                  "with --add-model: GiB the loaded models may take together (each its file and its KV and state "
                  "pools); loading one more first unloads the least recently used idle ones (default: no limit)");
  add_llama_server_flags(*cmd, o->common, o->engine, o->llama_server);
  cmd->callback([o, &exit_code] { exit_code = serve(*o); });
}

}  // namespace pagoda::cli
