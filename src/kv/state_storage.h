// StateStorage: owns the recurrent states of a hybrid model (short-convolution windows, linear-attention
// matrices): `num_slots` slots of `floats_per_slot` f32, one per sequence that holds a slot, and hands the model a
// RecurrentStateView of them (kv/kv_cache_view.h). Knows nothing of sequences: which slot is whose is
// KvCacheManager's business (SeqKvState::state_slot), as blocks are for KvStorage.
#pragma once

#include <cstdint>

#include "kv/kv_cache_view.h"
#include "kv/kv_storage.h"

namespace pagoda {

class StateStorage {
 public:
  StateStorage() = default;  // no slots: a model without recurrent layers
  StateStorage(int64_t floats_per_slot, int32_t num_slots);

  RecurrentStateView view() const { return {data_.data(), floats_per_slot_, num_slots_}; }
  int32_t num_slots() const { return num_slots_; }
  int64_t bytes_per_slot() const { return floats_per_slot_ * int64_t(sizeof(float)); }
  int64_t total_bytes() const { return bytes_per_slot() * num_slots_; }
  // Copies slot `src` into `dst` (an n > 1 fork that KvCacheManager queued in pending_state_copies()).
  void copy_slot(int32_t src, int32_t dst);

 private:
  int64_t floats_per_slot_ = 0;
  int32_t num_slots_ = 0;
  ZeroedArray<float> data_;
};

}  // namespace pagoda
