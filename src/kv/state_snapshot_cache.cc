// StateSnapshotCache: linear scans over a small fixed table (a pool holds tens of snapshots: each is a whole
// recurrent state), so nothing allocates and no index has to be kept in step.
#include "kv/state_snapshot_cache.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

StateSnapshotCache::StateSnapshotCache(int32_t first_slot, int32_t capacity)
    : first_slot_(first_slot),
      hashes_(size_t(capacity), 0),
      held_(size_t(capacity), 0),
      last_used_(size_t(capacity), 0) {
  PAGODA_CHECK(first_slot >= 0 && capacity >= 0, "a snapshot pool of {} slots from slot {}", capacity, first_slot);
}

std::optional<size_t> StateSnapshotCache::index_of(BlockHash hash) const {
  for (size_t i = 0; i < hashes_.size(); ++i)
    if (held_[i] != 0 && hashes_[i] == hash) return i;
  return std::nullopt;
}

std::optional<int32_t> StateSnapshotCache::find(BlockHash hash) const {
  const std::optional<size_t> i = index_of(hash);
  if (!i) return std::nullopt;
  return first_slot_ + int32_t(*i);
}

void StateSnapshotCache::touch(BlockHash hash) {
  const std::optional<size_t> i = index_of(hash);
  PAGODA_CHECK(i, "touch of snapshot {:x}, not held", hash);
  last_used_[*i] = ++clock_;
}

int32_t StateSnapshotCache::insert(BlockHash hash) {
  PAGODA_CHECK(capacity() > 0, "a snapshot pool of no slots");
  PAGODA_CHECK(!index_of(hash), "snapshot {:x} is already held", hash);
  size_t pick = 0;
  bool found_free = false;
  for (size_t i = 0; i < hashes_.size(); ++i) {
    if (held_[i] == 0) {
      pick = i;
      found_free = true;
      break;
    }
    if (last_used_[i] < last_used_[pick]) pick = i;
  }
  if (found_free) {
    ++num_held_;
  } else {
    ++num_evictions_;
  }
  hashes_[pick] = hash;
  held_[pick] = 1;
  last_used_[pick] = ++clock_;
  return first_slot_ + int32_t(pick);
}

void StateSnapshotCache::erase(BlockHash hash) {
  const std::optional<size_t> i = index_of(hash);
  if (!i) return;
  held_[*i] = 0;
  --num_held_;
}

void StateSnapshotCache::clear() {
  std::fill(held_.begin(), held_.end(), uint8_t(0));
  num_held_ = 0;
}

}  // namespace pagoda
