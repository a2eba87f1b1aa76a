// TransitionTable: a grammar's byte-class transition rows (next state per state and byte class), each filled from
// the state's byte edges the first time something steps from that state, so that a compile pays only for the
// states a mask or a match reaches. Owns the rows' memory and the per-row flags that make filling safe while the
// grammar is shared by threads; knows nothing of rules, calls or masks (grammar.h reads it, GrammarBuilder sizes it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace pagoda::grammar {

struct Grammar;

class TransitionTable {
 public:
  TransitionTable() = default;
  // A copy holds the same shape with no row filled: rows are a cache of the grammar's byte edges.
  TransitionTable(const TransitionTable& other);
  TransitionTable& operator=(const TransitionTable& other);
  TransitionTable(TransitionTable&& other) noexcept;
  TransitionTable& operator=(TransitionTable&& other) noexcept;

  // Room for `num_states` rows of `num_classes` entries, none filled. The memory is reserved, not written: a row's
  // pages are touched when it is filled.
  void reset(uint32_t num_states, uint32_t num_classes);

  // The row of `state` in `grammar` (whose byte edges and byte classes it is filled from, on first use): entry c is
  // the target of a byte of class c, or kNoState. Safe from any number of threads at once; a thread that finds the
  // row being filled by another waits for it.
  const uint32_t* row(const Grammar& grammar, uint32_t state) const {
    if (ready_[state].load(std::memory_order_acquire) == kFilled) [[likely]]
      return rows_.get() + size_t(state) * num_classes_;
    return fill(grammar, state);
  }

  uint32_t num_states() const { return num_states_; }
  uint32_t num_classes() const { return num_classes_; }
  // Rows filled so far.
  size_t num_filled_rows() const { return num_filled_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint8_t kEmpty = 0, kFilling = 1, kFilled = 2;
  const uint32_t* fill(const Grammar& grammar, uint32_t state) const;

  uint32_t num_states_ = 0, num_classes_ = 0;
  std::unique_ptr<uint32_t[]> rows_;                    // [num_states * num_classes], a row valid once kFilled
  std::unique_ptr<std::atomic<uint8_t>[]> ready_;       // [num_states]: kEmpty, kFilling or kFilled
  mutable std::atomic<size_t> num_filled_{0};
};

}  // namespace pagoda::grammar
