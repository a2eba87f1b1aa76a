// TransitionTable (transition_table.h): a row is claimed by one thread (kEmpty -> kFilling), written, then published
// (kFilled, release); a reader that sees kFilled (acquire) reads a complete row, one that sees kFilling waits.
#include "grammar/transition_table.h"

#include <algorithm>

#include "grammar/grammar.h"

namespace pagoda::grammar {

TransitionTable::TransitionTable(const TransitionTable& other) { reset(other.num_states_, other.num_classes_); }

TransitionTable& TransitionTable::operator=(const TransitionTable& other) {
  if (this != &other) reset(other.num_states_, other.num_classes_);
  return *this;
}

TransitionTable::TransitionTable(TransitionTable&& other) noexcept
    : num_states_(other.num_states_),
      num_classes_(other.num_classes_),
      rows_(std::move(other.rows_)),
      ready_(std::move(other.ready_)),
      num_filled_(other.num_filled_.load(std::memory_order_relaxed)) {
  other.num_states_ = other.num_classes_ = 0;
  other.num_filled_.store(0, std::memory_order_relaxed);
}

TransitionTable& TransitionTable::operator=(TransitionTable&& other) noexcept {
  if (this != &other) {
    num_states_ = other.num_states_;
    num_classes_ = other.num_classes_;
    rows_ = std::move(other.rows_);
    ready_ = std::move(other.ready_);
    num_filled_.store(other.num_filled_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    other.num_states_ = other.num_classes_ = 0;
    other.num_filled_.store(0, std::memory_order_relaxed);
  }
  return *this;
}

void TransitionTable::reset(uint32_t num_states, uint32_t num_classes) {
  num_states_ = num_states;
  num_classes_ = num_classes;
  // Default-initialized: no entry is written until its row is filled.
  rows_.reset(num_states > 0 ? new uint32_t[size_t(num_states) * num_classes] : nullptr);
  ready_ = std::make_unique<std::atomic<uint8_t>[]>(num_states);  // value-initialized: kEmpty
  num_filled_.store(0, std::memory_order_relaxed);
}

const uint32_t* TransitionTable::fill(const Grammar& grammar, uint32_t state) const {
  uint32_t* row = rows_.get() + size_t(state) * num_classes_;
  std::atomic<uint8_t>& ready = ready_[state];
  uint8_t seen = kEmpty;
  if (ready.compare_exchange_strong(seen, kFilling, std::memory_order_acquire)) {
    std::fill(row, row + num_classes_, kNoState);
    // Every edge's ends are class boundaries: its bytes are whole classes, consecutive.
    for (const ByteEdge& e : grammar.byte_edges_of(state))
      std::fill(row + grammar.byte_class[e.lo], row + grammar.byte_class[e.hi] + 1, e.target);
    num_filled_.fetch_add(1, std::memory_order_relaxed);
    ready.store(kFilled, std::memory_order_release);
    ready.notify_all();
    return row;
  }
  while (seen != kFilled) {
    ready.wait(seen, std::memory_order_acquire);
    seen = ready.load(std::memory_order_acquire);
  }
  return row;
}

}  // namespace pagoda::grammar
