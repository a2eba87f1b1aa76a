// Chunked perplexity and KL evaluation, against a base model or llama-perplexity's saved distributions.
#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>

#include "engine/engine.h"
#include "eval/token_stats.h"

namespace pagoda::eval {
namespace {

Status check_model(const Model& model, std::span<const TokenId> tokens, int32_t ctx, const char* which) {
  const ModelConfig& c = model.config();
  if (ctx > c.context_length)
    return make_error(fmt::format("--ctx {} exceeds the {} model's context of {}", ctx, which, c.context_length));
  for (TokenId t : tokens)
    if (t < 0 || t >= c.vocab_size)
      return make_error(fmt::format("token id {} is outside the {} model's vocabulary of {}", t, which, c.vocab_size));
  return Status();
}

// An engine that scores one chunk at a time: a chunk is one request whose prompt is computed max_batch tokens a
// step (as llama-perplexity's batches), with the logits of its scored rows handed back; no prefix cache, so every
// row is computed in the same batches whatever chunk came before.
Result<std::unique_ptr<Engine>> scoring_engine(const Model& model, int32_t ctx, int32_t max_batch, KvCacheTypes kv_types,
                                               int32_t num_threads) {
  EngineConfig c;
  c.max_seq_len = ctx + 1;  // room for the one token each request samples (and that is never computed)
  c.rope_context = ctx;     // as llama-perplexity's context of ctx (LongRoPE's factor set)
  c.kv_types = kv_types;
  c.kv.block_size = 16;
  c.kv.num_blocks = (c.max_seq_len + c.kv.block_size - 1) / c.kv.block_size;
  c.kv.enable_prefix_cache = false;
  c.scheduler.max_num_seqs = 1;
  c.scheduler.max_batched_tokens = max_batch;
  c.num_threads = num_threads;
  c.prompt_logits = true;
  return Engine::create(model, c);
}

// The logits rows of chunk positions first_scored .. end: f32 [ctx - first_scored, vocab].
Result<std::vector<float>> score_chunk(Engine& engine, std::span<const TokenId> chunk, int32_t first_scored) {
  GenerateRequest r;
  r.prompt.assign(chunk.begin(), chunk.end());
  r.prefill_only = true;
  r.prompt_logits_start = first_scored;
  PAGODA_ASSIGN_OR_RETURN(RequestHandle h, engine.submit(std::move(r)));
  return std::move(h.stream->wait_all().prompt_logits);
}

// A KL base's log-probabilities of one chunk's scored rows (rows of the vocabulary, from position ctx / 2 on).
using BaseRows = std::function<Status(int32_t chunk, std::span<const TokenId> tokens, std::vector<double>& log_probs)>;

Status check_ctx(int32_t ctx, int32_t max_batch) {
  if (ctx < 4) return make_error(fmt::format("--ctx must be at least 4, got {}", ctx));
  if (max_batch < 1) return make_error("the batch must hold at least one token");
  return Status();
}

Result<PerplexityReport> evaluate(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                  int32_t num_threads, const PerplexityOptions& options, int32_t num_chunks,
                                  const BaseRows& base_rows, double base_min_log_p,
                                  const std::function<void(int32_t, int32_t)>& on_chunk) {
  const int32_t ctx = options.ctx;
  const auto start = std::chrono::steady_clock::now();
  const int32_t max_batch = std::min(options.max_batch, ctx);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                          scoring_engine(model, ctx, max_batch, options.kv_types, num_threads));

  const int32_t vocab = model.config().vocab_size;
  const int32_t first = ctx / 2;  // score positions first..ctx-2, each predicting the next token
  std::vector<TokenId> chunk(static_cast<size_t>(ctx));
  std::vector<double> log_p(static_cast<size_t>(vocab)), base_log_probs;
  RunningMean nll, base_nll, nll_difference, chunk_difference, kl, top1;
  double max_kl = 0.0;
  PerplexityReport report;
  report.ctx = ctx;
  report.num_chunks = num_chunks;
  report.num_text_tokens = int64_t(tokens.size());
  for (int32_t c = 0; c < num_chunks; ++c) {
    std::copy_n(tokens.begin() + int64_t(c) * ctx, ctx, chunk.begin());
    chunk[0] = bos_id;
    PAGODA_ASSIGN_OR_RETURN(const std::vector<float> logits, score_chunk(*engine, chunk, first));
    if (base_rows) PAGODA_RETURN_IF_ERROR(base_rows(c, chunk, base_log_probs));
    RunningMean this_chunk_difference;
    for (int32_t pos = first; pos + 1 < ctx; ++pos) {  // the chunk's last token predicts nothing inside it
      const TokenId next = chunk[size_t(pos + 1)];
      const size_t row = size_t(pos - first) * size_t(vocab);
      log_softmax(std::span<const float>(logits).subspan(row, size_t(vocab)), log_p);
      nll.add(-log_p[size_t(next)]);
      if (base_rows) {
        const std::span<const double> log_base(base_log_probs.data() + row, size_t(vocab));
        base_nll.add(-log_base[size_t(next)]);
        nll_difference.add(log_base[size_t(next)] - log_p[size_t(next)]);
        this_chunk_difference.add(log_base[size_t(next)] - log_p[size_t(next)]);
        const double d = kl_divergence(log_base, log_p, base_min_log_p);
        kl.add(d);
        max_kl = std::max(max_kl, d);
        top1.add(argmax(log_p) == argmax(log_base) ? 1.0 : 0.0);
      }
    }
    if (base_rows) chunk_difference.add(this_chunk_difference.mean());
    report.running_ppl.push_back(std::exp(nll.mean()));
    if (on_chunk) on_chunk(c + 1, num_chunks);
  }
  report.num_scored = nll.count();
  report.mean_nll = nll.mean();
  report.ppl = std::exp(report.mean_nll);
  report.ppl_error = report.ppl * nll.standard_error();
  if (base_rows) {
    KlSummary k;
    k.mean_kl = kl.mean();
    k.mean_kl_error = kl.standard_error();
    k.max_kl = max_kl;
    k.top1_agreement = top1.mean();
    k.top1_agreement_error = top1.standard_error();
    k.base_ppl = std::exp(base_nll.mean());
    k.base_ppl_error = k.base_ppl * base_nll.standard_error();
    k.ln_ppl_ratio = nll_difference.mean();
    k.ln_ppl_ratio_error = nll_difference.standard_error();
    k.ln_ppl_ratio_chunk_error = chunk_difference.standard_error();
    report.kl = k;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace

Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             int32_t num_threads, const PerplexityOptions& options, const Model* base,
                                             const std::function<void(int32_t, int32_t)>& on_chunk) {
  const int32_t ctx = options.ctx;
  PAGODA_RETURN_IF_ERROR(check_ctx(ctx, options.max_batch));
  PAGODA_RETURN_IF_ERROR(check_model(model, tokens, ctx, "evaluated"));
  if (base != nullptr) {
    PAGODA_RETURN_IF_ERROR(check_model(*base, tokens, ctx, "base"));
    if (base->config().vocab_size != model.config().vocab_size)
      return make_error(fmt::format("the base model's vocabulary ({} tokens) differs from the model's ({})",
                                    base->config().vocab_size, model.config().vocab_size));
  }
  int32_t num_chunks = int32_t(int64_t(tokens.size()) / ctx);
  if (num_chunks == 0)
    return make_error(
        fmt::format("the text is {} tokens, shorter than one chunk of --ctx {}; give a longer text "
                    "or a smaller --ctx",
                    tokens.size(), ctx));
  if (options.max_chunks > 0) num_chunks = std::min(num_chunks, options.max_chunks);

  BaseRows base_rows;
  std::unique_ptr<Engine> base_engine;
  if (base != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(base_engine, scoring_engine(*base, ctx, std::min(options.max_batch, ctx),
                                                        options.base_kv_types, num_threads));
    const size_t vocab = size_t(base->config().vocab_size);
    base_rows = [&base_engine, ctx, vocab](int32_t, std::span<const TokenId> chunk, std::vector<double>& out) {
      PAGODA_ASSIGN_OR_RETURN(const std::vector<float> logits, score_chunk(*base_engine, chunk, ctx / 2));
      out.resize(logits.size());
      for (size_t row = 0; row < logits.size(); row += vocab)
        log_softmax(std::span<const float>(logits).subspan(row, vocab), std::span<double>(out).subspan(row, vocab));
      return Status();
    };
  }
  return evaluate(model, tokens, bos_id, num_threads, options, num_chunks, base_rows,
                  -std::numeric_limits<double>::infinity(), on_chunk);
}

Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             int32_t num_threads, const PerplexityOptions& options,
                                             LlamaLogitsFile& base_logits,
                                             const std::function<void(int32_t, int32_t)>& on_chunk) {
  const int32_t ctx = options.ctx;
  PAGODA_RETURN_IF_ERROR(check_ctx(ctx, options.max_batch));
  if (ctx != base_logits.ctx())
    return make_error(fmt::format("--ctx {} differs from the logits file's n_ctx of {}", ctx, base_logits.ctx()));
  if (base_logits.vocab() != model.config().vocab_size)
    return make_error(fmt::format("the logits file's vocabulary ({} tokens) differs from the model's ({})",
                                  base_logits.vocab(), model.config().vocab_size));
  PAGODA_RETURN_IF_ERROR(check_model(model, tokens, ctx, "evaluated"));
  const std::span<const TokenId> theirs = base_logits.tokens();
  const size_t same = size_t(std::mismatch(tokens.begin(), tokens.end(), theirs.begin(), theirs.end()).first - tokens.begin());
  if (same < theirs.size()) {
    if (same == tokens.size())
      return make_error(fmt::format("the text is {} tokens here, the logits file's chunks hold {}", tokens.size(),
                                    theirs.size()));
    return make_error(fmt::format("the text's tokens differ from the logits file's at token {} ({} here, {} there): "
                                  "not the same text, or not the same tokenization",
                                  same, tokens[same], theirs[same]));
  }
  int32_t num_chunks = base_logits.num_chunks();
  if (options.max_chunks > 0) num_chunks = std::min(num_chunks, options.max_chunks);
  BaseRows base_rows = [&base_logits](int32_t c, std::span<const TokenId>, std::vector<double>& out) {
    return base_logits.read_chunk(c, out);
  };
  // The file's rows hold no log-probability below their largest minus 16 (those are clipped), so the KL leaves
  // out what falls at or below -16, as llama-perplexity's does.
  return evaluate(model, tokens, bos_id, num_threads, options, num_chunks, base_rows, -16.0, on_chunk);
}

}  // namespace pagoda::eval
