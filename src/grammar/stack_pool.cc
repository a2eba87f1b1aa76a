// StackPool (stack_pool.h): interning and compaction.
#include "grammar/stack_pool.h"

namespace pagoda::grammar {

uint32_t StackPool::intern(uint32_t state, uint32_t parent) {
  const uint64_t k = key(state, parent);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash(k) & mask;; i = (i + 1) & mask) {
    const uint32_t slot = slots_[i];
    if (slot == 0) {
      const uint32_t id = uint32_t(frames_.size());
      frames_.push_back({state, parent});
      slots_[i] = id + 1;
      if (frames_.size() * 2 > slots_.size()) rehash(slots_.size() * 2);
      return id;
    }
    const StackFrame& f = frames_[slot - 1];
    if (f.state == state && f.parent == parent) return slot - 1;
  }
}

void StackPool::rehash(size_t num_slots) {
  slots_.assign(num_slots, 0);
  const size_t mask = num_slots - 1;
  for (uint32_t id = 0; id < frames_.size(); ++id) {
    size_t i = hash(key(frames_[id].state, frames_[id].parent)) & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = id + 1;
  }
}

std::vector<uint32_t> StackPool::compact(std::span<const uint32_t> roots) {
  std::vector<uint8_t> keep(frames_.size(), 0);
  for (uint32_t id : roots) {
    while (id < kUnknownBottom && !keep[id]) {
      keep[id] = 1;
      id = frames_[id].parent;
    }
  }
  std::vector<uint32_t> remap(frames_.size(), kRootBottom);
  std::vector<StackFrame> kept;
  for (uint32_t id = 0; id < frames_.size(); ++id) {
    if (!keep[id]) continue;
    StackFrame f = frames_[id];
    if (f.parent < kUnknownBottom) f.parent = remap[f.parent];  // parents come first
    remap[id] = uint32_t(kept.size());
    kept.push_back(f);
  }
  frames_ = std::move(kept);
  size_t num_slots = 64;
  while (num_slots < frames_.size() * 4) num_slots *= 2;
  rehash(num_slots);
  return remap;
}

}  // namespace pagoda::grammar
