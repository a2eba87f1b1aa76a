// Cutting a step into micro-batches.
#include "parallel/micro_batch.h"

#include <algorithm>

namespace pagoda::parallel {

std::vector<MicroBatch> split_micro_batches(const BatchView& batch, int32_t max_parts) {
  const int32_t n = batch.num_tokens();
  const int32_t parts = std::max(1, std::min(max_parts, n));
  std::vector<MicroBatch> out(static_cast<size_t>(parts));
  for (int32_t p = 0; p < parts; ++p) {
    MicroBatch& m = out[size_t(p)];
    m.token_begin = int32_t(int64_t(n) * p / parts);
    m.token_end = int32_t(int64_t(n) * (p + 1) / parts);
    m.seq_starts.push_back(0);
    for (int32_t s = 0; s < batch.num_seqs(); ++s) {
      const int32_t begin = std::max(batch.seq_starts[s], m.token_begin);
      const int32_t end = std::min(batch.seq_starts[s + 1], m.token_end);
      if (begin >= end) continue;
      m.seq_starts.push_back(end - m.token_begin);
      // The tokens of this sequence after the cut are not seen yet.
      m.context_lens.push_back(batch.context_lens[s] - (batch.seq_starts[s + 1] - end));
      const std::span<const BlockId> row = batch.block_tables.row(s);
      m.block_tables.insert(m.block_tables.end(), row.begin(), row.end());
    }
    for (size_t r = 0; r < batch.logits_rows.size(); ++r) {
      const int32_t t = batch.logits_rows[r];
      if (t < m.token_begin || t >= m.token_end) continue;
      m.logits_rows.push_back(t - m.token_begin);
      m.step_logits_idx.push_back(int32_t(r));
    }
  }
  return out;
}

BatchView MicroBatch::view(const BatchView& batch) const {
  const size_t begin = size_t(token_begin), count = size_t(token_end - token_begin);
  BatchView v;
  v.tokens = batch.tokens.subspan(begin, count);
  v.positions = batch.positions.subspan(begin, count);
  v.slot_ids = batch.slot_ids.subspan(begin, count);
  v.seq_starts = seq_starts;
  v.context_lens = context_lens;
  v.block_tables =
      BlockTableView{block_tables.data(), int32_t(context_lens.size()), batch.block_tables.max_blocks_per_seq};
  v.logits_rows = logits_rows;
  return v;
}

}  // namespace pagoda::parallel
