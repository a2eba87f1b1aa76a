// StateSlotPool: which recurrent-state slots (kv/state_storage.h) are free. A fixed number of slots, handed out
// from a free list; running out is an empty optional, never an abort. Plain bookkeeping: no bytes, no sequences.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pagoda {

class StateSlotPool {
 public:
  explicit StateSlotPool(int32_t num_slots);

  std::optional<int32_t> allocate();
  void release(int32_t slot);  // a slot allocated and not yet released
  int32_t num_free() const { return int32_t(free_.size()); }
  int32_t num_total() const { return int32_t(used_.size()); }

 private:
  std::vector<int32_t> free_;  // a stack
  std::vector<uint8_t> used_;  // [num_slots]
};

}  // namespace pagoda
