// One chunk at a time through a model, over an identity block table.
#include "eval/chunk_runner.h"

#include <numeric>

#include "core/check.h"

namespace pagoda::eval {

ChunkRunner::ChunkRunner(const Model& model, int32_t ctx, int32_t max_batch, KvDType kv_dtype, int32_t num_threads)
    : model_(model),
      kv_(model.config(), (ctx + kBlockSize - 1) / kBlockSize, kBlockSize, kv_dtype),
      workspace_(model.config(), max_batch, ctx, max_batch, num_threads),
      table_(size_t(kv_.num_blocks())),
      positions_(size_t(max_batch)),
      slots_(size_t(max_batch)),
      rows_(size_t(max_batch)) {
  std::iota(table_.begin(), table_.end(), 0);
}

LogitsView ChunkRunner::run(std::span<const TokenId> chunk, int32_t begin, int32_t end, int32_t first_scored,
                            ThreadPool& pool) {
  const int32_t n = end - begin;
  PAGODA_CHECK(n > 0 && n <= int32_t(positions_.size()), "a run of {} tokens, the runner takes 1 to {}", n,
               positions_.size());
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

}  // namespace pagoda::eval
