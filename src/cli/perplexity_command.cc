// `pagoda perplexity [-m MODEL] -f TEXT [--ctx N] [--chunks N] [--kl-base BASE.gguf | --kl-base-logits FILE] [--json]`.
// stdout: the running estimate per chunk ("[1]12.3456,[2]...") and the final figures, as llama-perplexity
// prints them, or one JSON object with --json; stderr: progress and notes.
#include "cli/perplexity_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "engine/engine_plan.h"
#include "cli/model_loading.h"
#include "cli/progress.h"
#include "loader/loaded_model.h"
#include "eval/perplexity.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"

namespace pagoda::cli {
namespace {

struct PerplexityCliOptions {
  CommonOptions common;
  std::string text_path;
  std::optional<int32_t> ctx;
  int32_t max_chunks = 0;
  int32_t batch = 512;
  std::optional<std::string> kl_base;
  std::optional<std::string> kl_base_logits;
  std::string base_kv_cache_dtype = "f16";
  bool json = false;
};

void print_json(const std::string& model, const std::string& text, const eval::PerplexityReport& r,
                const std::string& base) {
  std::printf(
      "{\"model\":\"%s\",\"text\":\"%s\",\"ctx\":%d,\"chunks\":%d,\"text_tokens\":%lld,\"scored_tokens\":%lld,"
      "\"ppl\":%.6f,\"ppl_error\":%.6f,\"mean_nll\":%.6f,\"seconds\":%.3f",
      model.c_str(), text.c_str(), r.ctx, r.num_chunks, static_cast<long long>(r.num_text_tokens),
      static_cast<long long>(r.num_scored), r.ppl, r.ppl_error, r.mean_nll, r.seconds);
  if (r.kl) {
    std::printf(
        ",\"kl\":{\"base\":\"%s\",\"base_ppl\":%.6f,\"base_ppl_error\":%.6f,\"mean_kl\":%.8f,\"mean_kl_error\":%.8f,"
        "\"max_kl\":%.6f,\"top1_agreement\":%.6f,\"top1_agreement_error\":%.6f,\"ln_ppl_ratio\":%.8f,"
        "\"ln_ppl_ratio_error\":%.8f,\"ln_ppl_ratio_chunk_error\":%.8f}",
        base.c_str(), r.kl->base_ppl, r.kl->base_ppl_error, r.kl->mean_kl, r.kl->mean_kl_error, r.kl->max_kl,
        r.kl->top1_agreement, r.kl->top1_agreement_error, r.kl->ln_ppl_ratio, r.kl->ln_ppl_ratio_error,
        r.kl->ln_ppl_ratio_chunk_error);
  }
  std::printf("}\n");
}

void print_text(const eval::PerplexityReport& r) {
  std::string running;
  for (size_t i = 0; i < r.running_ppl.size(); ++i)
    running += fmt::format("{}[{}]{:.4f}", i == 0 ? "" : ",", i + 1, r.running_ppl[i]);
  std::printf("%s\n", running.c_str());
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  if (r.kl) {
    const eval::KlSummary& k = *r.kl;
    std::printf("Base PPL:            %.4f +/- %.5f\n", k.base_ppl, k.base_ppl_error);
    std::printf("PPL ratio:           %.5f (model / base)\n", k.base_ppl > 0 ? r.ppl / k.base_ppl : 0.0);
    std::printf("ln(PPL / base PPL):  %.6f +/- %.6f (paired over the scored tokens; +/- %.6f over the chunks)\n",
                k.ln_ppl_ratio, k.ln_ppl_ratio_error, k.ln_ppl_ratio_chunk_error);
    std::printf("Mean KL divergence:  %.6f +/- %.6f nats\n", k.mean_kl, k.mean_kl_error);
    std::printf("Max KL divergence:   %.6f nats\n", k.max_kl);
    std::printf("Same top-1 token:    %.3f +/- %.3f %%\n", 100.0 * k.top1_agreement, 100.0 * k.top1_agreement_error);
  }
}

int perplexity(const PerplexityCliOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  if (o.text_path.empty()) return report_error("no text: pass one with -f TEXT");
  Result<std::string> text = read_text_file(o.text_path);
  if (!text.ok()) return report_error(text.error());
  const Result<KvCacheTypes> kv_types = resolve_kv_types(*config);
  if (!kv_types.ok()) return report_error(kv_types.error());
  const std::optional<KvDType> base_kv_dtype = parse_kv_dtype(o.base_kv_cache_dtype);
  if (!base_kv_dtype)
    return report_error(fmt::format("invalid option: --base-kv-cache-dtype must be one of {}, got '{}'",
                                    kv_dtype_names(), o.base_kv_cache_dtype));
  if (o.max_chunks < 0) return report_error("--chunks must be 0 (all) or positive");
  if (o.batch < 1) return report_error("--batch must be at least 1");

  const kernels::KernelTable& kernels = kernels::best_kernels();
  Result<ModelOptions> model_options = resolve_model_options(o.common);
  if (!model_options.ok()) return report_error(model_options.error());
  Result<LoadedModel> loaded = load_configured_model(*config, kernels, *model_options);
  if (!loaded.ok()) return report_error(loaded.error());
  if (o.kl_base && o.kl_base_logits) return report_error("--kl-base and --kl-base-logits: give one base, not both");
  std::optional<eval::LlamaLogitsFile> base_logits;
  if (o.kl_base_logits) {
    Result<eval::LlamaLogitsFile> f = eval::LlamaLogitsFile::open(*o.kl_base_logits);
    if (!f.ok()) return report_error("--kl-base-logits: " + f.error());
    base_logits = std::move(f).value();
  }
  std::optional<LoadedModel> base;
  if (o.kl_base) {
    // "bundled" names the embedded model, so it can be the base of its own INT8-KV or no-fusion variants.
    Result<LoadedModel> b = load_model(*o.kl_base == "bundled" ? "" : *o.kl_base, kernels, *model_options);
    if (!b.ok()) return report_error("--kl-base: " + b.error());
    base = std::move(b).value();
  }

  const ModelConfig& mc = loaded->model->config();
  eval::PerplexityOptions options;
  options.ctx = o.ctx.value_or(base_logits ? base_logits->ctx() : std::min(512, mc.context_length));
  options.max_chunks = o.max_chunks;
  options.max_batch = o.batch;
  options.kv_types = *kv_types;
  options.base_kv_types = *base_kv_dtype;
  const std::vector<TokenId> tokens = loaded->tokenizer->encode(*text, true);
  const int32_t num_threads = resolve_num_threads(config->threads, mc);
  std::fprintf(stderr, "pagoda: perplexity of %s over %s: %zu tokens, ctx %d, %s KV (%lld bytes per token), %d threads%s\n",
               loaded->source.c_str(), o.text_path.c_str(), tokens.size(), options.ctx,
               kv_types_name(*kv_types).c_str(), static_cast<long long>(KvStorage::bytes_per_token(mc.kv_shape(), *kv_types)),
               num_threads,
               base           ? (", KL against " + base->source).c_str()
               : base_logits ? (", KL against llama-perplexity's logits in " + *o.kl_base_logits).c_str()
                             : "");
  Progress progress("perplexity");
  const auto on_chunk = [&progress](int32_t done, int32_t total) {
    progress.update(done, total, fmt::format("chunk {}", done));
  };
  Result<eval::PerplexityReport> report =
      base_logits ? eval::evaluate_perplexity(*loaded->model, tokens, loaded->tokenizer->bos_id(), num_threads,
                                              options, *base_logits, on_chunk)
                  : eval::evaluate_perplexity(*loaded->model, tokens, loaded->tokenizer->bos_id(), num_threads,
                                              options, base ? base->model.get() : nullptr, on_chunk);
  progress.finish();
  if (!report.ok()) return report_error(report.error());
  if (o.json) {
    print_json(loaded->source, o.text_path, *report, base ? base->source : o.kl_base_logits.value_or(""));
  } else {
    print_text(*report);
  }
  std::fprintf(stderr, "pagoda: %d chunks, %lld scored tokens in %.2f s\n", report->num_chunks,
               static_cast<long long>(report->num_scored), report->seconds);
  return 0;
}

}  // namespace

void add_perplexity_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity over a text (and KL divergence against a base model)");
  add_common_options(*cmd, options->common);
  add_rope_scaling_options(*cmd, options->common);
  cmd->add_option("-f,--file", options->text_path, "text file to score");
  cmd->add_option("--ctx", options->ctx,
                  "tokens per chunk; the second half of each is scored (default: 512 or the "
                  "model's context if smaller)");
  cmd->add_option("--chunks", options->max_chunks, "score at most N chunks; 0 = all")->capture_default_str();
  cmd->add_option("--batch", options->batch, "tokens per forward call")->capture_default_str();
  cmd->add_option("--kl-base", options->kl_base,
                  "base model (GGUF path, or 'bundled') to compare next-token distributions against");
  cmd->add_option("--kl-base-logits", options->kl_base_logits,
                  "llama-perplexity's saved distributions (its --kl-divergence-base FILE) to compare against: "
                  "its ctx, chunks and tokens");
  cmd->add_option("--base-kv-cache-dtype", options->base_kv_cache_dtype, "the base model's KV cache: f16 (default), f32, bf16, q8_0, q4_0 or int8")
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "print one JSON object instead of text");
  cmd->callback([options, &exit_code] { exit_code = perplexity(*options); });
}

}  // namespace pagoda::cli
