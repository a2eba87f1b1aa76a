// StackPool: the frames below the tops of a set of pushdown stacks, shared between stacks and hash-consed (one
// frame per (state, parent) pair), so that equal stacks are equal ids and a stack set stays duplicate-free.
// A frame is the state to return to when the rule called from it ends. Frames are immutable; a frame's parent
// always has a smaller id. One pool per matcher (or per mask-cache build); not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pagoda::grammar {

// Parents that are not frames: the bottom of a stack.
inline constexpr uint32_t kRootBottom = 0xFFFFFFFF;     // below the root rule: popping it ends the grammar
inline constexpr uint32_t kUnknownBottom = 0xFFFFFFFE;  // an unknown caller (mask cache): popping it escapes

// The hash of a (state, parent) pair packed in 64 bits, for the open-addressing tables of the pool and the stepper:
// every bit of the key reaches the low bits (the tables take hash & (size - 1)), so pairs that differ only in their
// state, as the frames called from one parent do, spread across the table.
inline uint64_t stack_key_hash(uint64_t k) {
  k ^= k >> 31;
  k *= 0x7FB5D329728EA185ull;
  k ^= k >> 27;
  k *= 0x81DADEF4BC2DD44Dull;
  k ^= k >> 33;
  return k;
}

struct StackFrame {
  uint32_t state;   // where the caller continues
  uint32_t parent;  // the frame below, or a bottom
};

class StackPool {
 public:
  StackPool() { slots_.assign(64, 0); }
  uint32_t intern(uint32_t state, uint32_t parent);
  const StackFrame& operator[](uint32_t id) const { return frames_[id]; }
  uint32_t size() const { return uint32_t(frames_.size()); }
  // Drops every frame not reachable from `roots` (frame ids or bottoms); returns the new id of each old id
  // (unreachable ones map to kRootBottom). Kept frames keep their relative order.
  std::vector<uint32_t> compact(std::span<const uint32_t> roots);

 private:
  static uint64_t key(uint32_t state, uint32_t parent) { return (uint64_t(state) << 32) | parent; }
  static size_t hash(uint64_t k) { return size_t(stack_key_hash(k)); }
  void rehash(size_t num_slots);

  std::vector<StackFrame> frames_;
  std::vector<uint32_t> slots_;  // open addressing, power-of-two size: frame id + 1, 0 = empty
};

}  // namespace pagoda::grammar
