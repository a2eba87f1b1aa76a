// BatchView: the flattened input of one forward step, built by the engine (never by the model). One row per
// scheduled token, sequences back to back; all spans are borrowed from the caller for the call's duration.
#pragma once

#include <cstdint>
#include <span>

#include "core/types.h"

namespace pagoda {

// Physical block ids per sequence: row s holds the blocks of sequence s, logical block j at [s][j].
struct BlockTableView {
  const BlockId* data = nullptr;  // [num_seqs][max_blocks_per_seq]
  int32_t num_seqs = 0;
  int32_t max_blocks_per_seq = 0;

  std::span<const BlockId> row(int32_t seq_idx) const {
    return {data + int64_t(seq_idx) * max_blocks_per_seq, size_t(max_blocks_per_seq)};
  }
};

// A KV block the caller copied (copy-on-write of a shared, partly filled block) into a fresh one before the step.
struct KvBlockCopy {
  BlockId src_block_id = -1;
  BlockId dst_block_id = -1;
};

struct BatchView {
  std::span<const TokenId> tokens;        // [num_tokens]
  std::span<const Pos> positions;         // [num_tokens]
  std::span<const int32_t> slot_ids;      // [num_tokens] block_id * block_size + offset: where K/V is written
  std::span<const int32_t> seq_starts;    // [num_seqs + 1] prefix sums into tokens
  std::span<const int32_t> context_lens;  // [num_seqs] tokens attention sees, new ones included
  BlockTableView block_tables;            // [num_seqs][max_blocks]
  std::span<const int32_t> logits_rows;   // token rows that need logits (usually each sequence's last)
  // Made by the caller in its KV before this step; the model ignores them, but ranks that hold other shards of
  // the KV (parallel/) make the same copies in theirs.
  std::span<const KvBlockCopy> block_copies;
  // Token rows whose final hidden state (after the last norm, before the classifier) is wanted, without logits:
  // a pooling request's (embeddings).
  std::span<const int32_t> hidden_rows = {};  // (an initializer: aggregates that stop at block_copies stay complete)
  // A hybrid model's recurrent-state slot of each sequence (KvCacheView::state), [num_seqs]; empty for any other
  // model. A sequence whose first token this step is at position 0 starts from a zero state; any other continues
  // the state its slot holds (a chunked prompt, a decode).
  std::span<const int32_t> state_slots = {};

  int32_t num_tokens() const { return int32_t(tokens.size()); }
  int32_t num_seqs() const { return seq_starts.empty() ? 0 : int32_t(seq_starts.size()) - 1; }
};

}  // namespace pagoda
