// Speculative decoding flags and their resolution.
#include "cli/spec_options.h"

#include <fmt/format.h>

#include <cstdio>
#include <optional>
#include <tuple>

#include "core/check.h"
#include "kernels/kernels.h"
#include "spec/ngram_drafter.h"

namespace pagoda::cli {

// The history table's bound per generation (two are kept): 64M n-grams, about 9 GB at most.
constexpr int64_t kMaxNgramHistory = int64_t(64) << 20;

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
  app.add_option("--spec-ngram-corpus", o.ngram_corpus,
                 "--spec ngram: a text file (e.g. the model's own earlier outputs) whose n-grams draft where the "
                 "sequence has no match of its own (llama.cpp's static lookup cache)");
  app.add_option("--spec-ngram-history", o.ngram_history,
                 "--spec ngram: n-grams learned from the outputs of finished requests, kept for later ones (a bound "
                 "on the table; 0, the default: none learned). Outputs stay exact; drafts, and so speed, then depend "
                 "on what other requests generated")
      ->capture_default_str();
  app.add_option("--draft-model", o.draft_model,
                 "--spec draft: the draft model (GGUF file, HF folder, or 'bundled' for the embedded model); same "
                 "vocabulary as the target");
  app.add_option("--draft-kv-blocks", o.draft_kv_blocks,
                 "--spec draft: blocks of the draft model's own KV pool (prefix-cached; default: what fits in "
                 "the target KV pool's bytes, at most its block count)");
  app.add_option("--cache-type-k-draft", o.cache_type_k_draft,
                 "(also -ctkd) --spec draft: the draft model's KV cache type of K, as llama.cpp: f16 (default), f32, "
                 "bf16, q8_0, q4_0 or int8");
  app.add_option("--cache-type-v-draft", o.cache_type_v_draft,
                 "(also -ctvd) --spec draft: the draft model's KV cache type of V (default f16)");
}

namespace {

// The corpus table's bound: about 72 bytes an n-gram (key, four followers, the hash map's node), so 300 MB.
constexpr int64_t kCorpusMaxEntries = int64_t(4) << 20;
constexpr size_t kCorpusChunkBytes = size_t(64) << 10;  // tokenized at once, cut at a line's end

Result<std::unique_ptr<NgramTable>> load_corpus(const std::string& path, const Tokenizer& tokenizer) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) return make_error(fmt::format("cannot read --spec-ngram-corpus {}", path));
  auto table = std::make_unique<NgramTable>(NgramDrafter::kTableMaxN, kCorpusMaxEntries);
  std::string pending, chunk(kCorpusChunkBytes, '\0');
  int64_t num_tokens = 0, num_bytes = 0;
  bool full = false;
  auto add = [&](std::string_view text) {
    const std::vector<TokenId> ids = tokenizer.encode(text, /*add_bos=*/false, /*parse_special=*/false);
    table->add(ids);
    num_tokens += int64_t(ids.size());
    num_bytes += int64_t(text.size());
    full = table->full();
  };
  while (!full) {
    const size_t got = std::fread(chunk.data(), 1, chunk.size(), file.get());
    if (got == 0) break;
    pending.append(chunk, 0, got);
    const size_t cut = pending.rfind('\n');
    if (cut == std::string::npos) {
      if (pending.size() >= kCorpusChunkBytes) {  // one long line: cut it anyway
        add(pending);
        pending.clear();
      }
      continue;
    }
    add(std::string_view(pending).substr(0, cut + 1));
    pending.erase(0, cut + 1);
  }
  if (std::ferror(file.get())) return make_error(fmt::format("cannot read --spec-ngram-corpus {}", path));
  if (!full && !pending.empty()) add(pending);
  std::fprintf(stderr, "pagoda: n-gram corpus %s: %lld tokens, %lld n-grams%s\n", path.c_str(),
               static_cast<long long>(num_tokens), static_cast<long long>(table->num_entries()),
               full ? fmt::format(" (the table is full: only the first {} bytes were read)", num_bytes).c_str() : "");
  return table;
}

}  // namespace

Result<SpecResources> load_spec_resources(const SpecCliOptions& o, const Tokenizer& target_tokenizer) {
  SpecResources r;
  if (o.method == "draft" && !o.draft_model.empty()) {
    PAGODA_ASSIGN_OR_RETURN(LoadedModel draft,
                            load_model(o.draft_model == "bundled" ? "" : o.draft_model, kernels::best_kernels()));
    std::fprintf(stderr, "pagoda: draft model %s: %d layers, width %d\n", draft.source.c_str(),
                 draft.model->config().num_layers, draft.model->config().dim);
    r.draft = std::make_unique<LoadedModel>(std::move(draft));
  }
  if (o.method == "ngram" && !o.ngram_corpus.empty()) {
    PAGODA_ASSIGN_OR_RETURN(r.corpus, load_corpus(o.ngram_corpus, target_tokenizer));
  }
  return r;
}

Status apply_spec_options(const SpecCliOptions& o, EngineConfig& c, const SpecResources& resources) {
  if (o.method != "draft" && (!o.draft_model.empty() || o.draft_kv_blocks != 0 || !o.cache_type_k_draft.empty() ||
                              !o.cache_type_v_draft.empty()))
    return make_error(
        "invalid option: --draft-model, --draft-kv-blocks and --cache-type-k/v-draft go with --spec draft");
  if (o.method != "ngram" && (o.ngram_min || o.ngram_max || !o.ngram_corpus.empty() || o.ngram_history != 0))
    return make_error("invalid option: --spec-ngram-min/max/corpus/history go with --spec ngram");
  if (o.ngram_history < 0 || o.ngram_history > kMaxNgramHistory)
    return make_error(fmt::format("invalid option: --spec-ngram-history must be in [0, {}], got {}", kMaxNgramHistory,
                                  o.ngram_history));
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
    PAGODA_CHECK(resources.draft != nullptr, "--spec draft without its loaded draft model");
    KvCacheTypes draft_types;
    for (auto [flag, name, side] : {std::tuple{"--cache-type-k-draft", &o.cache_type_k_draft, &draft_types.k},
                                    std::tuple{"--cache-type-v-draft", &o.cache_type_v_draft, &draft_types.v}}) {
      if (name->empty()) continue;
      const std::optional<KvDType> dtype = parse_kv_dtype(*name);
      if (!dtype)
        return make_error(
            fmt::format("invalid option: {} must be one of {}, got '{}'", flag, kv_dtype_names(), *name));
      *side = *dtype;
    }
    c.spec = SpecDecodeConfig{.method = SpecMethod::kDraftModel,
                              .draft_model = resources.draft->model.get(),
                              .draft_kv_blocks = o.draft_kv_blocks,
                              .draft_kv_types = draft_types};
  } else {
    PAGODA_CHECK(o.ngram_corpus.empty() || resources.corpus != nullptr, "--spec-ngram-corpus without its table");
    c.spec = SpecDecodeConfig{.method = SpecMethod::kNgram,
                              .ngram_min = ngram_min,
                              .ngram_max = ngram_max,
                              .ngram_corpus = resources.corpus.get(),
                              .ngram_history = o.ngram_history};
  }
  c.scheduler.num_speculative_tokens = o.num_tokens;
  c.scheduler.adaptive_num_speculative_tokens = !o.fixed_length;
  return Status();
}

std::string describe_spec(const EngineConfig& c) {
  switch (c.spec.method) {
    case SpecMethod::kNone: return "off";
    case SpecMethod::kNgram:
      return fmt::format("ngram, up to {} tokens ({}), n-grams {}..{}{}{}", c.scheduler.num_speculative_tokens,
                         c.scheduler.adaptive_num_speculative_tokens ? "adaptive" : "fixed", c.spec.ngram_min,
                         c.spec.ngram_max, c.spec.ngram_corpus != nullptr ? ", corpus" : "",
                         c.spec.ngram_history > 0 ? fmt::format(", history of {} n-grams", c.spec.ngram_history) : "");
    case SpecMethod::kDraftModel:
      return fmt::format("draft model, up to {} tokens ({}), draft KV {}", c.scheduler.num_speculative_tokens,
                         c.scheduler.adaptive_num_speculative_tokens ? "adaptive" : "fixed",
                         kv_types_name(c.spec.draft_kv_types));
  }
  return "off";
}

}  // namespace pagoda::cli
