// Micro-batches: one step's batch cut into a few contiguous token ranges, so pipeline stages can work on
// different ranges at once (stage 1 runs range 0 while stage 0 runs range 1). A cut may fall inside a
// sequence's new tokens: the range after it attends to the KV the range before wrote, which every stage has
// written by then, since each stage runs the ranges in order. A plain function of the batch, so the leader
// and every worker cut the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "model/batch_view.h"

namespace pagoda::parallel {

struct MicroBatch {
  int32_t token_begin = 0;  // of the step's batch
  int32_t token_end = 0;
  std::vector<int32_t> seq_starts;       // rebased to token_begin
  std::vector<int32_t> context_lens;     // a sequence cut short sees up to its last token in this range
  std::vector<BlockId> block_tables;     // [num_seqs][max_blocks_per_seq]
  std::vector<int32_t> logits_rows;      // rebased, in the step's order
  std::vector<int32_t> step_logits_idx;  // for each of logits_rows: its index in the step's batch.logits_rows

  // A view of `batch` (tokens, positions and slots point into it; the rest into this object).
  BatchView view(const BatchView& batch) const;
};

// Cuts `batch` into min(max_parts, num_tokens) ranges of as equal a token count as they go.
std::vector<MicroBatch> split_micro_batches(const BatchView& batch, int32_t max_parts);

}  // namespace pagoda::parallel
