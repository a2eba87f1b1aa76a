// Chunked perplexity and KL evaluation.
#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>

#include "eval/chunk_runner.h"
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

}  // namespace

Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             ThreadPool& pool, const PerplexityOptions& options, const Model* base,
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
  ChunkRunner runner(model, ctx, max_batch, options.kv_dtype, pool.num_threads());
  std::unique_ptr<ChunkRunner> base_runner;
  if (base != nullptr)
    base_runner = std::make_unique<ChunkRunner>(*base, ctx, max_batch, options.base_kv_dtype, pool.num_threads());

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
    for (int32_t begin = 0; begin < ctx; begin += max_batch) {
      const int32_t end = std::min(ctx, begin + max_batch);
      const LogitsView logits = runner.run(chunk, begin, end, first, pool);
      LogitsView base_logits;
      if (base_runner) base_logits = base_runner->run(chunk, begin, end, first, pool);
      for (int32_t r = 0; r < logits.num_rows; ++r) {
        const int32_t pos = std::max(begin, first) + r;
        if (pos + 1 >= ctx) break;  // the chunk's last token predicts nothing inside it
        const TokenId next = chunk[size_t(pos + 1)];
        log_softmax(logits.row(r), log_p);
        nll.add(-log_p[size_t(next)]);
        if (base_runner) {
          log_softmax(base_logits.row(r), log_base);
          base_nll.add(-log_base[size_t(next)]);
          const double d = kl_divergence(log_base, log_p);
          kl.add(d);
          max_kl = std::max(max_kl, d);
          top1.add(argmax(log_p) == argmax(log_base) ? 1.0 : 0.0);
        }
      }
    }
    report.running_ppl.push_back(std::exp(nll.mean()));
    if (on_chunk) on_chunk(c + 1, num_chunks);
  }
  report.num_scored = nll.count();
  report.mean_nll = nll.mean();
  report.ppl = std::exp(report.mean_nll);
  report.ppl_error = report.ppl * nll.standard_error();
  if (base_runner) {
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
