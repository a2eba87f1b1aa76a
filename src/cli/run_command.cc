// `pagoda run [-m MODEL] -p PROMPT [-n N] [--temp T --top-k K --top-p P --seed S ...]`.
// stdout: the prompt and its continuation, streamed; stderr: the figures at the end.
#include "cli/run_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "cli/model_loading.h"
#include "cli/parallel_setup.h"
#include "cli/spec_options.h"
#include "engine/engine.h"
#include "engine/engine_plan.h"
#include "engine/paced_stream_reader.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"
#include "tokenizer/stream_decoder.h"

namespace pagoda::cli {
namespace {

// `run` serves one request: prompts computed 256 tokens a step, KV in blocks of kv_cache.block_size.
constexpr int32_t kRunPromptTokensPerStep = 256;

struct RunOptions {
  CommonOptions common;
  std::string prompt;
  bool print_config = false;
  bool no_bos = false;
  bool quiet = false;
  // llama.cpp's defaults, so `pagoda run` and `llama-cli` sample alike out of the box.
  SamplingParams sampling = [] {
    SamplingParams p;
    p.max_tokens = 256;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    return p;
  }();
  std::optional<uint64_t> seed;
  std::string logits_out;  // every step's logits row before sampling, raw little-endian f32, appended
  SpecCliOptions spec;
};

int run(const RunOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (o.print_config) {
    std::printf("%s\n", config_to_json(*config).c_str());
    for (const std::string& line : unused_by_single_sequence(*config, "run")) std::printf("# %s\n", line.c_str());
    return 0;
  }
  if (o.prompt.empty()) return report_error("no prompt: pass one with -p PROMPT");
  report_unused_by_single_sequence(*config, "run");

  SamplingParams sampling = o.sampling;
  sampling.seed = o.seed;
  if (Status valid = sampling.validate(); !valid.ok()) return report_error(valid.message());

  const kernels::KernelTable& kernels = kernels::best_kernels();
  Result<ModelOptions> model_options = resolve_model_options(o.common);
  if (!model_options.ok()) return report_error(model_options.error());
  Result<ParallelRun> parallel = ParallelRun::join(*config);  // outlives the model, which may use its group
  if (!parallel.ok()) return report_error(parallel.error());
  parallel->set_model_options(*model_options);
  Result<LoadedModel> loaded = load_configured_model(*config, kernels, *model_options);
  if (!loaded.ok()) return report_error(loaded.error());
  const int32_t num_threads = parallel->threads_per_rank(resolve_num_threads(config->threads, loaded->model->config()));
  if (parallel->follow_or_lead(*loaded, num_threads)) return 0;
  const ModelConfig& mc = loaded->model->config();
  const int32_t max_seq_len = config->max_seq_len > 0 ? config->max_seq_len : mc.context_length;
  if (max_seq_len > mc.context_length)
    std::fprintf(stderr, "pagoda: note: max_seq_len %d is beyond the model's trained context of %d\n", max_seq_len,
                 mc.context_length);

  const Tokenizer& tok = *loaded->tokenizer;
  GenerateRequest request;
  request.prompt = tok.encode(o.prompt, !o.no_bos);
  request.sampling = sampling;
  request.output_logits = !o.logits_out.empty();
  // One request through the engine: the cache holds what this run can use, not the whole context (a 128K-context
  // model with a short prompt must not reserve 128K positions of KV). A prompt that does not fit gets the
  // configured context, so the engine's refusal names it.
  const int32_t run_seq_len = int32_t(
      std::min<int64_t>(max_seq_len, std::max<int64_t>(2, int64_t(request.prompt.size()) + sampling.max_tokens)));
  Result<KvCacheTypes> kv_types = resolve_kv_types(*config);
  if (!kv_types.ok()) return report_error(kv_types.error());
  const int64_t ram_bytes = int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGE_SIZE));
  Result<EngineConfig> ec = plan_single_sequence_engine(run_seq_len, config->kv_cache.block_size, *kv_types,
                                                        kRunPromptTokensPerStep, num_threads, mc.kv_shape(), ram_bytes);
  if (!ec.ok()) return report_error(ec.error());
  ec->rope_context = max_seq_len;  // the configured context, not the run's sizing (LongRoPE's factor set)
  Result<SpecResources> spec_resources = load_spec_resources(o.spec, tok);
  if (!spec_resources.ok()) return report_error(spec_resources.error());
  if (Status spec = apply_spec_options(o.spec, *ec, *spec_resources); !spec.ok()) return report_error(spec.message());
  Result<std::unique_ptr<Engine>> engine = Engine::create(*loaded->model, tok, *ec);
  if (!engine.ok()) return report_error(engine.error());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> logits_file(nullptr, &std::fclose);
  if (!o.logits_out.empty()) {
    logits_file.reset(std::fopen(o.logits_out.c_str(), "wb"));
    if (!logits_file) return report_error(fmt::format("--logits-out: cannot write {}", o.logits_out));
  }

  // Echo the prompt as the model sees it (decoded from its tokens), then stream the continuation.
  StreamDecoder prompt_decoder(tok);
  std::string prompt_text;
  for (TokenId t : request.prompt) prompt_text += prompt_decoder.push(t);
  prompt_text += prompt_decoder.flush();

  parallel->begin_measurement();
  const auto start = std::chrono::steady_clock::now();
  Result<RequestHandle> handle = (*engine)->submit(std::move(request));
  if (!handle.ok()) return report_error(handle.error());
  std::fwrite(prompt_text.data(), 1, prompt_text.size(), stdout);
  std::fflush(stdout);
  // A millisecond late on the screen is no one's loss; a wake-up of this thread per token is a fifth of a
  // bundled-model step (engine/paced_stream_reader.h).
  PacedStreamReader reader(*handle->stream, std::chrono::milliseconds(1));
  RequestOutput last;
  for (;;) {
    RequestOutput out = reader.next();
    std::fwrite(out.text.data(), 1, out.text.size(), stdout);
    std::fflush(stdout);
    if (logits_file) std::fwrite(out.logits.data(), sizeof(float), out.logits.size(), logits_file.get());
    if (out.finished) {
      last = std::move(out);
      break;
    }
  }
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!o.quiet) {
    const RequestTiming& t = *last.timing;
    const double tpot_s = t.tpot_s();
    std::fprintf(stderr,
                 "\nmodel: %s (%s kernels, %d threads)\nprompt tokens: %d\ngenerated tokens: %d\nfinish reason: %s\n"
                 "prefill: %.2f ms\nTTFT: %.2f ms\nTPOT: %.3f ms\ndecode: %.1f tokens/s\n",
                 loaded->source.c_str(), std::string(kernels::isa_name(kernels.isa)).c_str(), (*engine)->num_threads(),
                 last.num_prompt_tokens, last.num_output_tokens,
                 std::string(finish_reason_name(last.finish_reason)).c_str(), t.prefill_s() * 1e3, t.ttft_s() * 1e3,
                 tpot_s * 1e3, tpot_s > 0.0 ? 1.0 / tpot_s : 0.0);
    const EngineStats stats = (*engine)->stats();
    if (stats.spec_num_drafts > 0)
      std::fprintf(stderr, "speculative: %lld of %lld drafts accepted (%.1f %%), %.2f tokens per verifying step\n",
                   static_cast<long long>(stats.spec_num_accepted_tokens),
                   static_cast<long long>(stats.spec_num_draft_tokens),
                   100.0 * double(stats.spec_num_accepted_tokens) / double(stats.spec_num_draft_tokens),
                   1.0 + double(stats.spec_num_accepted_tokens) / double(stats.spec_num_drafts));
    const std::string comm = parallel->communication_summary(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!comm.empty()) std::fprintf(stderr, "%s\n", comm.c_str());
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from one prompt, streamed to stdout");
  add_common_options(*cmd, options->common, /*with_model=*/true, /*splits_over_ranks=*/true);
  add_rope_scaling_options(*cmd, options->common);
  SamplingParams& s = options->sampling;
  cmd->add_option("-p,--prompt", options->prompt, "the prompt text");
  cmd->add_option("-n,--max-tokens", s.max_tokens, "new tokens to generate at most")->capture_default_str();
  cmd->add_option("--temp,--temperature", s.temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  cmd->add_option("--top-k", s.top_k, "keep the K most likely tokens; 0 = off")->capture_default_str();
  cmd->add_option("--top-p", s.top_p, "nucleus sampling; 1 = off")->capture_default_str();
  cmd->add_option("--min-p", s.min_p, "drop tokens below min-p times the best; 0 = off")->capture_default_str();
  cmd->add_option("--repeat-penalty", s.repetition_penalty, "repetition penalty; 1 = off")->capture_default_str();
  cmd->add_option("--presence-penalty", s.presence_penalty, "presence penalty")->capture_default_str();
  cmd->add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty")->capture_default_str();
  add_spec_options(*cmd, options->spec);
  cmd->add_option("--seed", options->seed, "random seed (default: random)");
  cmd->add_option("--stop", s.stop, "stop string (repeatable)");
  cmd->add_option("--logits-out", options->logits_out,
                  "write every step's logits (before sampling) to FILE as raw f32, vocabulary-sized rows");
  cmd->add_flag("--ignore-eos", s.ignore_eos, "keep generating past end-of-sequence");
  cmd->add_flag("--no-bos", options->no_bos, "do not prepend the BOS token");
  cmd->add_flag("-q,--quiet", options->quiet, "do not print the figures to stderr");
  cmd->add_flag("--print-config", options->print_config, "print the effective configuration and exit");
  cmd->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace pagoda::cli
