// Flattening a plan into the model's step input.
#include "engine/batch_builder.h"

#include <algorithm>

#include "core/check.h"
#include "engine/sequence.h"

namespace pagoda {

BatchBuilder::BatchBuilder(int32_t max_tokens, int32_t max_seqs, int32_t max_blocks_per_seq, int32_t max_logits_rows,
                           int32_t max_hidden_rows)
    : max_tokens_(max_tokens),
      max_seqs_(max_seqs),
      max_blocks_per_seq_(max_blocks_per_seq),
      max_logits_rows_(max_logits_rows),
      max_hidden_rows_(max_hidden_rows),
      tokens_(static_cast<size_t>(max_tokens)),
      positions_(static_cast<size_t>(max_tokens)),
      slot_ids_(static_cast<size_t>(max_tokens)),
      seq_starts_(static_cast<size_t>(max_seqs) + 1),
      context_lens_(static_cast<size_t>(max_seqs)),
      state_slots_(static_cast<size_t>(max_seqs)),
      block_tables_(static_cast<size_t>(max_seqs) * static_cast<size_t>(max_blocks_per_seq)),
      logits_rows_(static_cast<size_t>(max_logits_rows)),
      hidden_rows_(static_cast<size_t>(max_hidden_rows)) {
  logits_row_info_.reserve(static_cast<size_t>(max_logits_rows));
  hidden_row_info_.reserve(static_cast<size_t>(max_hidden_rows));
}

BatchView BatchBuilder::build(const SchedulePlan& plan) {
  const int32_t num_seqs = int32_t(plan.seqs.size());
  PAGODA_CHECK(num_seqs >= 1 && num_seqs <= max_seqs_, "{} sequences in a step, room for {}", num_seqs, max_seqs_);
  PAGODA_CHECK(plan.num_batched_tokens <= max_tokens_, "{} tokens in a step, room for {}", plan.num_batched_tokens,
               max_tokens_);
  int32_t width = 1;
  for (const ScheduledSeq& s : plan.seqs) width = std::max(width, s.seq->kv.block_table.num_blocks());
  PAGODA_CHECK(width <= max_blocks_per_seq_, "a block table of {} blocks, room for {}", width, max_blocks_per_seq_);

  int32_t t = 0;
  int32_t num_logits = 0;
  int32_t num_hidden = 0;
  bool has_state_slots = false;  // a hybrid model's sequences all hold one
  logits_row_info_.clear();
  hidden_row_info_.clear();
  for (int32_t i = 0; i < num_seqs; ++i) {
    const ScheduledSeq& s = plan.seqs[size_t(i)];
    const Sequence& seq = *s.seq;
    const BlockTable& table = seq.kv.block_table;
    seq_starts_[size_t(i)] = t;
    PAGODA_CHECK(
        s.num_draft_tokens == int32_t(seq.draft_tokens.size()) &&
            (s.num_draft_tokens == 0 || s.first_pos + s.num_new_tokens == seq.num_tokens() + s.num_draft_tokens),
        "request {}: {} drafts scheduled, {} held", seq.request_id, s.num_draft_tokens, seq.draft_tokens.size());
    for (int32_t j = 0; j < s.num_new_tokens; ++j, ++t) {
      const Pos pos = s.first_pos + j;
      // Past the sequence's tokens come the drafts it verifies this step.
      tokens_[size_t(t)] =
          pos < seq.num_tokens() ? seq.tokens[size_t(pos)] : seq.draft_tokens[size_t(pos - seq.num_tokens())];
      positions_[size_t(t)] = pos;
      slot_ids_[size_t(t)] = table.slot_id(pos);
      // The last token's row samples; verifying drafts, so does each draft's.
      const bool samples = s.samples && j >= s.num_new_tokens - 1 - s.num_draft_tokens;
      const bool prompt_row = seq.wants_prompt_logits_row(pos);
      if (samples || prompt_row) {
        PAGODA_CHECK(num_logits < max_logits_rows_, "more than {} logits rows in a step", max_logits_rows_);
        logits_rows_[size_t(num_logits++)] = t;
        logits_row_info_.push_back(LogitsRow{i, pos, samples, prompt_row});
      }
      if (seq.wants_hidden_row(pos)) {
        PAGODA_CHECK(num_hidden < max_hidden_rows_, "more than {} hidden rows in a step", max_hidden_rows_);
        hidden_rows_[size_t(num_hidden++)] = t;
        hidden_row_info_.push_back(HiddenRow{i, pos});
      }
    }
    context_lens_[size_t(i)] = s.first_pos + s.num_new_tokens;
    state_slots_[size_t(i)] = seq.kv.state_slot;
    has_state_slots = seq.kv.state_slot >= 0;
    BlockId* row = block_tables_.data() + int64_t(i) * width;
    const std::span<const BlockId> ids = table.block_ids();
    std::copy(ids.begin(), ids.end(), row);
    std::fill(row + ids.size(), row + width, BlockId(0));  // never read: past the context
  }
  seq_starts_[size_t(num_seqs)] = t;

  BatchView batch;
  batch.tokens = std::span<const TokenId>(tokens_).first(size_t(t));
  batch.positions = std::span<const Pos>(positions_).first(size_t(t));
  batch.slot_ids = std::span<const int32_t>(slot_ids_).first(size_t(t));
  batch.seq_starts = std::span<const int32_t>(seq_starts_).first(size_t(num_seqs) + 1);
  batch.context_lens = std::span<const int32_t>(context_lens_).first(size_t(num_seqs));
  batch.block_tables = BlockTableView{block_tables_.data(), num_seqs, width};
  batch.logits_rows = std::span<const int32_t>(logits_rows_).first(size_t(num_logits));
  batch.hidden_rows = std::span<const int32_t>(hidden_rows_).first(size_t(num_hidden));
  if (has_state_slots) batch.state_slots = std::span<const int32_t>(state_slots_).first(size_t(num_seqs));
  return batch;
}

}  // namespace pagoda
