// BatchBuilder: turns a SchedulePlan into the BatchView of one forward call: the scheduled tokens of every
// sequence back to back, their positions and KV slots, per-sequence context lengths and block tables, and the
// rows whose logits are sampled. Owns the arrays (sized once, reused every step); the view borrows them until
// the next build().
#pragma once

#include <cstdint>
#include <vector>

#include "engine/schedule_plan.h"
#include "model/batch_view.h"

namespace pagoda {

class BatchBuilder {
 public:
  BatchBuilder(int32_t max_tokens, int32_t max_seqs, int32_t max_blocks_per_seq);

  // logits_seq_idx[r] is the plan index of the sequence whose logits are row r of the forward's output.
  BatchView build(const SchedulePlan& plan);
  const std::vector<int32_t>& logits_seq_idx() const { return logits_seq_idx_; }

 private:
  int32_t max_tokens_;
  int32_t max_seqs_;
  int32_t max_blocks_per_seq_;
  std::vector<TokenId> tokens_;        // [max_tokens]
  std::vector<Pos> positions_;         // [max_tokens]
  std::vector<int32_t> slot_ids_;      // [max_tokens]
  std::vector<int32_t> seq_starts_;    // [max_seqs + 1]
  std::vector<int32_t> context_lens_;  // [max_seqs]
  std::vector<BlockId> block_tables_;  // [max_seqs][max_blocks_per_seq], rows packed to this step's widest
  std::vector<int32_t> logits_rows_;   // [max_seqs]
  std::vector<int32_t> logits_seq_idx_;
};

}  // namespace pagoda
