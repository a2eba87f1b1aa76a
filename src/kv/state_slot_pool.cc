// The free list of recurrent-state slots.
#include "kv/state_slot_pool.h"

#include "core/check.h"

namespace pagoda {

StateSlotPool::StateSlotPool(int32_t num_slots) : used_(size_t(num_slots), 0) {
  PAGODA_CHECK(num_slots >= 0, "a state pool of {} slots", num_slots);
  free_.reserve(size_t(num_slots));
  for (int32_t s = num_slots - 1; s >= 0; --s) free_.push_back(s);
}

std::optional<int32_t> StateSlotPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t slot = free_.back();
  free_.pop_back();
  used_[size_t(slot)] = 1;
  return slot;
}

void StateSlotPool::release(int32_t slot) {
  PAGODA_CHECK(slot >= 0 && slot < num_total() && used_[size_t(slot)] != 0, "release of state slot {}, not in use",
               slot);
  used_[size_t(slot)] = 0;
  free_.push_back(slot);
}

}  // namespace pagoda
