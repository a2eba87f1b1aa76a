// StateSnapshotCache: which copies of a hybrid model's recurrent state the prefix cache keeps, each the state of a
// sequence right after the full block whose chained hash names it (kv/block_hash.h), so that a prompt sharing that
// prefix can start from it instead of from position 0. A fixed number of snapshot slots (their bytes are
// StateStorage's, slots [first_slot, first_slot + capacity)); a new snapshot takes a free slot, else the least
// recently used one. Plain bookkeeping with no allocation after construction: no bytes, no blocks, no sequences;
// KvCacheManager decides when a snapshot is taken, used or dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/block_hash.h"

namespace pagoda {

class StateSnapshotCache {
 public:
  StateSnapshotCache(int32_t first_slot, int32_t capacity);

  // The storage slot holding the snapshot named `hash`, or nullopt.
  std::optional<int32_t> find(BlockHash hash) const;
  // Marks the snapshot named `hash` (held) as the most recently used.
  void touch(BlockHash hash);
  // A slot for a new snapshot named `hash` (not held; capacity > 0): a free one, else the least recently used
  // snapshot's, which is dropped. The caller copies the state into it.
  int32_t insert(BlockHash hash);
  // Drops the snapshot named `hash` if held (its block was evicted: no lookup can reach it).
  void erase(BlockHash hash);
  void clear();

  int32_t capacity() const { return int32_t(hashes_.size()); }
  int32_t size() const { return num_held_; }
  int64_t num_evictions() const { return num_evictions_; }

 private:
  std::optional<size_t> index_of(BlockHash hash) const;

  int32_t first_slot_;
  std::vector<BlockHash> hashes_;    // [capacity] valid where held_
  std::vector<uint8_t> held_;        // [capacity]
  std::vector<uint64_t> last_used_;  // [capacity] a use counter's value at the last insert or touch
  uint64_t clock_ = 0;
  int32_t num_held_ = 0;
  int64_t num_evictions_ = 0;
};

}  // namespace pagoda
