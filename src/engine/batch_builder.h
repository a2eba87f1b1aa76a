// BatchBuilder: turns a SchedulePlan into the BatchView of one forward call: the scheduled tokens of every
// sequence back to back, their positions and KV slots, per-sequence context lengths and block tables, and the
// rows whose logits are needed (each sampling sequence's last, every position of one verifying drafts, and the
// prompt rows a request asked for), the rows whose final hidden state a pooling request reads, and on a hybrid
// model each sequence's recurrent-state slot. Owns the
// arrays (sized once, reused every step); the view borrows them until the next build().
#pragma once

#include <cstdint>
#include <vector>

#include "engine/schedule_plan.h"
#include "model/batch_view.h"

namespace pagoda {

class BatchBuilder {
 public:
  // max_logits_rows, max_hidden_rows: rows a step may ask logits or hidden states for (the workspace's room).
  BatchBuilder(int32_t max_tokens, int32_t max_seqs, int32_t max_blocks_per_seq, int32_t max_logits_rows,
               int32_t max_hidden_rows = 0);

  // What row r of the forward's logits is for.
  struct LogitsRow {
    int32_t seq_idx = 0;      // into the plan's seqs
    Pos pos = 0;              // the position whose logits these are (they predict the token after it)
    bool samples = false;     // the sequence's next token (or a draft's verdict) is sampled from it
    bool prompt_row = false;  // the request asked for it (Sequence::wants_prompt_logits_row)
  };
  // What hidden row r of the forward's output is for (Sequence::wants_hidden_row).
  struct HiddenRow {
    int32_t seq_idx = 0;  // into the plan's seqs
    Pos pos = 0;
  };
  BatchView build(const SchedulePlan& plan);
  const std::vector<LogitsRow>& logits_rows() const { return logits_row_info_; }
  const std::vector<HiddenRow>& hidden_rows() const { return hidden_row_info_; }

 private:
  int32_t max_tokens_;
  int32_t max_seqs_;
  int32_t max_blocks_per_seq_;
  int32_t max_logits_rows_;
  int32_t max_hidden_rows_;
  std::vector<TokenId> tokens_;        // [max_tokens]
  std::vector<Pos> positions_;         // [max_tokens]
  std::vector<int32_t> slot_ids_;      // [max_tokens]
  std::vector<int32_t> seq_starts_;    // [max_seqs + 1]
  std::vector<int32_t> context_lens_;  // [max_seqs]
  std::vector<int32_t> state_slots_;   // [max_seqs]: each sequence's recurrent-state slot (hybrid models)
  std::vector<BlockId> block_tables_;  // [max_seqs][max_blocks_per_seq], rows packed to this step's widest
  std::vector<int32_t> logits_rows_;   // [max_logits_rows] token rows
  std::vector<LogitsRow> logits_row_info_;
  std::vector<int32_t> hidden_rows_;  // [max_hidden_rows] token rows
  std::vector<HiddenRow> hidden_row_info_;
};

}  // namespace pagoda
