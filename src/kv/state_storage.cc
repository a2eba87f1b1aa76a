// The recurrent-state slots' bytes.
#include "kv/state_storage.h"

#include <cstring>

#include "core/check.h"

namespace pagoda {

StateStorage::StateStorage(int64_t floats_per_slot, int32_t num_slots)
    : floats_per_slot_(floats_per_slot), num_slots_(num_slots) {
  PAGODA_CHECK(floats_per_slot >= 0 && num_slots >= 0, "a state pool of {} slots of {} floats", num_slots,
               floats_per_slot);
  data_.allocate(size_t(floats_per_slot) * size_t(num_slots));
}

void StateStorage::copy_slot(int32_t src, int32_t dst) {
  PAGODA_CHECK(src >= 0 && src < num_slots_ && dst >= 0 && dst < num_slots_ && src != dst,
               "state copy {} -> {} of {} slots", src, dst, num_slots_);
  const RecurrentStateView v = view();
  std::memcpy(v.slot(dst), v.slot(src), size_t(bytes_per_slot()));
}

}  // namespace pagoda
