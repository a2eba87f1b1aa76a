// Chunked perplexity and KL evaluation.
#include "eval/perplexity.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>

#include "eval/token_stats.h"
#include "kv/kv_storage.h"

namespace pagoda::eval {
namespace {

constexpr int32_t kBlockSize = 16;

// One model's pass over one chunk at a time: its own KV blocks (identity table) and workspace.
class ChunkRunner {
 public:
  ChunkRunner(const Model& model, int32_t ctx, int32_t max_batch, KvDType kv_dtype, int32_t num_threads)
      : model_(model),
        kv_(model.config(), (ctx + kBlockSize - 1) / kBlockSize, kBlockSize, kv_dtype),
        workspace_(model.config(), max_batch, ctx, max_batch, num_threads),
        table_(size_t(kv_.num_blocks())),
        positions_(size_t(max_batch)),
        slots_(size_t(max_batch)),
        rows_(size_t(max_batch)) {
    std::iota(table_.begin(), table_.end(), 0);
  }

  // Runs chunk[begin, end) after chunk[0, begin) is in the cache; returns the logits of the rows at chunk
  // positions >= first_scored, in order.
  LogitsView run(std::span<const TokenId> chunk, int32_t begin, int32_t end, int32_t first_scored, ThreadPool& pool) {
    const int32_t n = end - begin;
    int32_t num_rows = 0;
    for (int32_t i = 0; i < n; ++i) {
      const Pos p = begin + i;
      positions_[size_t(i)] = p;
      slots_[size_t(i)] = p;  // identity table: slot = block * block_size + offset = p
      if (p >= first_scored) rows_[size_t(num_rows++)] = i;
    }
    const int32_t seq_starts[2] = {0, n};
    const int32_t context_len = end;
    BatchView batch;
    batch.tokens = chunk.subspan(size_t(begin), size_t(n));
    batch.positions = std::span<const Pos>(positions_).first(size_t(n));
    batch.slot_ids = std::span<const int32_t>(slots_).first(size_t(n));
    batch.seq_starts = seq_starts;
    batch.context_lens = std::span<const int32_t>(&context_len, 1);
    batch.block_tables = BlockTableView{table_.data(), 1, int32_t(table_.size())};
    batch.logits_rows = std::span<const int32_t>(rows_).first(size_t(num_rows));
    return model_.forward(batch, kv_.view(), workspace_, pool);
  }

 private:
  const Model& model_;
  KvStorage kv_;
  Workspace workspace_;
  std::vector<BlockId> table_;
  std::vector<Pos> positions_;
  std::vector<int32_t> slots_;
  std::vector<int32_t> rows_;
};

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
