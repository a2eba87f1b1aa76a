// StackSet and StackStepper: the pushdown automaton's configuration and its one move. A configuration is the
// set of stacks the bytes so far may have led to (the grammar may be ambiguous); each is kept as its top state
// and the pool frame below it, and only stacks whose top can consume a byte are kept (calls and returns that
// consume nothing are applied eagerly by expand). StackStepper owns scratch memory only; the grammar and the
// pool are borrowed (bind re-points them).
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/stack_pool.h"

namespace pagoda::grammar {

struct StackTop {
  uint32_t state;   // a state with byte edges
  uint32_t parent;  // frame id in the pool, or a bottom
  bool operator==(const StackTop&) const = default;
};

struct StackSet {
  std::vector<StackTop> tops;
  bool can_end = false;                 // some stack returned below the root: the bytes so far are a complete sentence
  bool escaped = false;                 // some stack returned into kUnknownBottom (mask cache building)...
  std::vector<uint32_t> escaped_rules;  // ...from the frames of these rules
  // A move passed kMaxExpansionWork: the configuration is unknown (its stacks are incomplete), and so is every one
  // stepped from it. The matcher makes this an error; the mask walk leaves such tokens to the matcher.
  bool overflowed = false;
  bool dead() const { return tops.empty() && !can_end && !escaped && !overflowed; }
  void clear() {
    tops.clear();
    can_end = escaped = overflowed = false;
    escaped_rules.clear();
  }
};

// The expansion work (stacks visited) of one move. Every stack of a configuration is kept, however many: a very
// ambiguous grammar (one whose distinct parses multiply with each byte) is bounded by this instead, and a move
// past it marks its configuration overflowed rather than dropping stacks, which would refuse valid text. The
// grammars the front ends write stay far below (JSON needs a handful; an anyOf of many rules one per branch).
inline constexpr size_t kMaxExpansionWork = 1u << 16;

class StackStepper {
 public:
  StackStepper(const Grammar& grammar, StackPool& pool) : g_(&grammar), pool_(&pool) {}
  // Points the stepper at another grammar and pool (their owner was copied or moved).
  void bind(const Grammar& grammar, StackPool& pool) {
    g_ = &grammar;
    pool_ = &pool;
  }

  // The configuration of a fresh stack: `state` on top of `parent`, expanded.
  void start(uint32_t state, uint32_t parent, StackSet& out);
  // out = the configuration after consuming `byte` (out is cleared first; it must not alias `in`).
  void step(const StackSet& in, uint8_t byte, StackSet& out);

 private:
  void expand(uint32_t state, uint32_t parent, StackSet& out);
  bool insert_seen(uint64_t key);
  void clear_seen();

  const Grammar* g_;
  StackPool* pool_;
  std::vector<StackTop> work_;
  // Stacks expanded during this move (cycles of nullable calls and duplicates stop here): a short list, or a
  // hash set once it grows.
  std::vector<uint64_t> seen_list_;
  std::vector<uint64_t> seen_slots_;  // open addressing; kEmptySlot = empty
  size_t seen_count_ = 0;
  size_t work_done_ = 0;  // stacks expanded during this move
};

}  // namespace pagoda::grammar
