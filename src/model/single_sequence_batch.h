// SingleSequenceBatch: the BatchView of one sequence's positions [first, last) over its KV blocks, with the
// logits of the last of them: the forward passes that run outside the scheduler's plans (a draft model's proposals,
// the engine's step-time calibration). Owns the position and slot arrays (reused from call to call); the view
// borrows them, the tokens and the block ids until the next view() or until they change. Takes the ids, not the
// kv module's BlockTable: the model sees only the KV cache view.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "model/batch_view.h"

namespace pagoda {

class SingleSequenceBatch {
 public:
  // `tokens`: the sequence's tokens from position 0 (at least `last`); `block_ids`: its blocks in logical order,
  // of `block_size` tokens, holding slots for [0, last) (BlockTable::block_ids()); `state_slot`: its recurrent-state
  // slot on a hybrid model (BatchView::state_slots), -1 for any other.
  BatchView view(std::span<const TokenId> tokens, std::span<const BlockId> block_ids, int32_t block_size, int32_t first,
                 int32_t last, int32_t state_slot = -1) {
    const int32_t n = last - first;
    positions_.resize(size_t(n));
    slot_ids_.resize(size_t(n));
    for (int32_t i = 0; i < n; ++i) {
      positions_[size_t(i)] = first + i;
      const int32_t pos = first + i;  // BatchView::slot_ids: block_id * block_size + offset
      slot_ids_[size_t(i)] = block_ids[size_t(pos / block_size)] * block_size + pos % block_size;
    }
    seq_starts_[0] = 0;
    seq_starts_[1] = n;
    context_len_ = last;
    logits_row_ = n - 1;
    state_slot_ = state_slot;
    return BatchView{.tokens = tokens.subspan(size_t(first), size_t(n)),
                     .positions = positions_,
                     .slot_ids = slot_ids_,
                     .seq_starts = seq_starts_,
                     .context_lens = {&context_len_, 1},
                     .block_tables = {block_ids.data(), 1, int32_t(block_ids.size())},
                     .logits_rows = {&logits_row_, 1},
                     .block_copies = {},
                     .hidden_rows = {},
                     .state_slots = state_slot >= 0 ? std::span<const int32_t>(&state_slot_, 1)
                                                    : std::span<const int32_t>()};
  }

 private:
  std::vector<Pos> positions_;
  std::vector<int32_t> slot_ids_;
  int32_t seq_starts_[2] = {0, 0};
  int32_t context_len_ = 0;
  int32_t logits_row_ = 0;
  int32_t state_slot_ = -1;
};

}  // namespace pagoda
