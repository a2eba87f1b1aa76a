// Chunked perplexity and KL evaluation.
#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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

}  // namespace

Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             int32_t num_threads, const PerplexityOptions& options, const Model* base,
                                             const std::function<void(int32_t, int32_t)>& on_chunk) {
  const int32_t ctx = options.ctx;
  if (ctx < 4) return make_error(fmt::format("--ctx must be at least 4, got {}", ctx));
  if (options.max_batch < 1) return make_error("the batch must hold at least one token");
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

  const auto start = std::chrono::steady_clock::now();
  const int32_t max_batch = std::min(options.max_batch, ctx);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                          scoring_engine(model, ctx, max_batch, options.kv_types, num_threads));
  std::unique_ptr<Engine> base_engine;
  if (base != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(base_engine, scoring_engine(*base, ctx, max_batch, options.base_kv_types, num_threads));
  }

  const int32_t vocab = model.config().vocab_size;
  const int32_t first = ctx / 2;  // score positions first..ctx-2, each predicting the next token
  std::vector<TokenId> chunk(static_cast<size_t>(ctx));
  std::vector<double> log_p(static_cast<size_t>(vocab)), log_base(static_cast<size_t>(vocab));
  RunningMean nll, base_nll, kl, top1;
  double max_kl = 0.0;
  PerplexityReport report;
  report.ctx = ctx;
  report.num_chunks = num_chunks;
  report.num_text_tokens = int64_t(tokens.size());
  for (int32_t c = 0; c < num_chunks; ++c) {
    std::copy_n(tokens.begin() + int64_t(c) * ctx, ctx, chunk.begin());
    chunk[0] = bos_id;
    PAGODA_ASSIGN_OR_RETURN(const std::vector<float> logits, score_chunk(*engine, chunk, first));
    std::vector<float> base_logits;
    if (base_engine) {
      PAGODA_ASSIGN_OR_RETURN(base_logits, score_chunk(*base_engine, chunk, first));
    }
    auto row = [&](const std::vector<float>& rows, int32_t pos) {
      return std::span<const float>(rows).subspan(size_t(pos - first) * size_t(vocab), size_t(vocab));
    };
    for (int32_t pos = first; pos + 1 < ctx; ++pos) {  // the chunk's last token predicts nothing inside it
      const TokenId next = chunk[size_t(pos + 1)];
      log_softmax(row(logits, pos), log_p);
      nll.add(-log_p[size_t(next)]);
      if (base_engine) {
        log_softmax(row(base_logits, pos), log_base);
        base_nll.add(-log_base[size_t(next)]);
        const double d = kl_divergence(log_base, log_p);
        kl.add(d);
        max_kl = std::max(max_kl, d);
        top1.add(argmax(log_p) == argmax(log_base) ? 1.0 : 0.0);
      }
    }
    report.running_ppl.push_back(std::exp(nll.mean()));
    if (on_chunk) on_chunk(c + 1, num_chunks);
  }
  report.num_scored = nll.count();
  report.mean_nll = nll.mean();
  report.ppl = std::exp(report.mean_nll);
  report.ppl_error = report.ppl * nll.standard_error();
  if (base_engine) {
    KlSummary k;
    k.mean_kl = kl.mean();
    k.mean_kl_error = kl.standard_error();
    k.max_kl = max_kl;
    k.top1_agreement = top1.mean();
    k.top1_agreement_error = top1.standard_error();
    k.base_ppl = std::exp(base_nll.mean());
    k.base_ppl_error = k.base_ppl * base_nll.standard_error();
    report.kl = k;
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace pagoda::eval
