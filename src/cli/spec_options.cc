// Speculative decoding flags and their resolution.
#include "cli/spec_options.h"

#include <fmt/format.h>

#include <cstdio>

#include "core/check.h"
#include "kernels/kernels.h"

namespace pagoda::cli {

void add_spec_options(CLI::App& app, SpecCliOptions& o) {
  app.add_option("--spec", o.method,
                 "speculative decoding: none (default), ngram (prompt lookup: drafts copied from where the "
                 "sequence's last tokens occurred before) or draft (a smaller model's greedy continuation, "
                 "--draft-model); greedy output unchanged, sampling keeps its distribution");
  app.add_option("--spec-tokens", o.num_tokens, "drafts verified per sequence and step at most (with --spec)")
      ->capture_default_str();
  app.add_flag("--spec-fixed", o.fixed_length,
               "verify every draft the drafter has, up to --spec-tokens (default: per sequence, the number that "
               "maximizes expected tokens per step cost, from its acceptance rate and the step cost measured online)");
  app.add_option("--spec-ngram-min", o.ngram_min, "--spec ngram: shortest suffix looked up (default 1)");
  app.add_option("--spec-ngram-max", o.ngram_max, "--spec ngram: longest suffix looked up, tried first (default 4)");
  app.add_option("--draft-model", o.draft_model,
                 "--spec draft: the draft model (GGUF file, HF folder, or 'bundled' for the embedded model); same "
                 "vocabulary as the target");
  app.add_option("--draft-kv-blocks", o.draft_kv_blocks,
                 "--spec draft: blocks of the draft model's own KV pool (f32, prefix-cached; default: what fits in "
                 "the target KV pool's bytes, at most its block count)");
}

Result<std::unique_ptr<LoadedModel>> load_draft_model(const SpecCliOptions& o) {
  if (o.method != "draft" || o.draft_model.empty()) return std::unique_ptr<LoadedModel>();
  PAGODA_ASSIGN_OR_RETURN(LoadedModel draft,
                          load_model(o.draft_model == "bundled" ? "" : o.draft_model, kernels::best_kernels()));
  std::fprintf(stderr, "pagoda: draft model %s: %d layers, width %d\n", draft.source.c_str(),
               draft.model->config().num_layers, draft.model->config().dim);
  return std::make_unique<LoadedModel>(std::move(draft));
}

Status apply_spec_options(const SpecCliOptions& o, EngineConfig& c, const LoadedModel* draft) {
  if (o.method != "draft" && (!o.draft_model.empty() || o.draft_kv_blocks != 0))
    return make_error("invalid option: --draft-model and --draft-kv-blocks go with --spec draft");
  if (o.method != "ngram" && (o.ngram_min || o.ngram_max))
    return make_error("invalid option: --spec-ngram-min/max go with --spec ngram");
  if (o.method == "none") {
    c.spec = SpecDecodeConfig{};
    c.scheduler.num_speculative_tokens = 0;
    return Status();
  }
  if (o.method != "ngram" && o.method != "draft")
    return make_error(fmt::format("invalid option: --spec must be none, ngram or draft, got '{}'", o.method));
  if (o.num_tokens < 1 || o.num_tokens > 64)
    return make_error(fmt::format("invalid option: --spec-tokens must be in [1, 64], got {}", o.num_tokens));
  const int32_t ngram_min = o.ngram_min.value_or(1), ngram_max = o.ngram_max.value_or(4);
  if (ngram_min < 1 || ngram_min > ngram_max || ngram_max > 64)
    return make_error(
        fmt::format("invalid option: n-gram sizes must satisfy 1 <= --spec-ngram-min <= "
                    "--spec-ngram-max <= 64, got {} and {}",
                    ngram_min, ngram_max));
  if (o.method == "draft") {
    if (o.draft_model.empty()) return make_error("invalid option: --spec draft needs --draft-model");
    if (o.draft_kv_blocks < 0) return make_error("invalid option: --draft-kv-blocks must be at least 1");
    PAGODA_CHECK(draft != nullptr, "--spec draft without its loaded draft model");
    c.spec = SpecDecodeConfig{
        .method = SpecMethod::kDraftModel, .draft_model = draft->model.get(), .draft_kv_blocks = o.draft_kv_blocks};
  } else {
    c.spec = SpecDecodeConfig{.method = SpecMethod::kNgram, .ngram_min = ngram_min, .ngram_max = ngram_max};
  }
  c.scheduler.num_speculative_tokens = o.num_tokens;
  c.scheduler.adaptive_num_speculative_tokens = !o.fixed_length;
  return Status();
}

std::string describe_spec(const EngineConfig& c) {
  switch (c.spec.method) {
    case SpecMethod::kNone: return "off";
    case SpecMethod::kNgram:
      return fmt::format("ngram, up to {} tokens ({}), n-grams {}..{}", c.scheduler.num_speculative_tokens,
                         c.scheduler.adaptive_num_speculative_tokens ? "adaptive" : "fixed", c.spec.ngram_min,
                         c.spec.ngram_max);
    case SpecMethod::kDraftModel:
      return fmt::format("draft model, up to {} tokens ({})", c.scheduler.num_speculative_tokens,
                         c.scheduler.adaptive_num_speculative_tokens ? "adaptive" : "fixed");
  }
  return "off";
}

}  // namespace pagoda::cli
