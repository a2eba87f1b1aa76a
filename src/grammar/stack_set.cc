// StackStepper (stack_set.h): expansion (calls and returns that consume nothing) and the byte step.
#include "grammar/stack_set.h"

#include <algorithm>

namespace pagoda::grammar {
namespace {
constexpr uint64_t kEmptySlot = ~uint64_t(0);
constexpr size_t kSeenListMax = 16;
}  // namespace

void StackStepper::clear_seen() {
  work_done_ = 0;
  seen_list_.clear();
  if (seen_count_ > 0) {
    // Emptied at the size this move needed: a table grown by one large move is not filled whole by every small
    // move after it (a larger one grows it again, at a cost in proportion to its own work).
    size_t fit = 64;
    while (fit < seen_count_ * 4) fit *= 2;
    seen_slots_.assign(std::min(fit, seen_slots_.size()), kEmptySlot);
    seen_count_ = 0;
  }
}

bool StackStepper::insert_seen(uint64_t key) {
  if (seen_count_ == 0) {
    for (const uint64_t k : seen_list_) {
      if (k == key) return false;
    }
    if (seen_list_.size() < kSeenListMax) {
      seen_list_.push_back(key);
      return true;
    }
    // Switch to the hash set.
    if (seen_slots_.size() < 64) seen_slots_.assign(64, kEmptySlot);
    for (const uint64_t k : seen_list_) {
      size_t i = size_t(stack_key_hash(k)) & (seen_slots_.size() - 1);
      while (seen_slots_[i] != kEmptySlot) i = (i + 1) & (seen_slots_.size() - 1);
      seen_slots_[i] = k;
      ++seen_count_;
    }
    seen_list_.clear();
  }
  if ((seen_count_ + 1) * 2 > seen_slots_.size()) {
    std::vector<uint64_t> old = std::move(seen_slots_);
    seen_slots_.assign(old.size() * 2, kEmptySlot);
    for (const uint64_t k : old) {
      if (k == kEmptySlot) continue;
      size_t i = size_t(stack_key_hash(k)) & (seen_slots_.size() - 1);
      while (seen_slots_[i] != kEmptySlot) i = (i + 1) & (seen_slots_.size() - 1);
      seen_slots_[i] = k;
    }
  }
  const size_t mask = seen_slots_.size() - 1;
  for (size_t i = size_t(stack_key_hash(key)) & mask;; i = (i + 1) & mask) {
    if (seen_slots_[i] == key) return false;
    if (seen_slots_[i] == kEmptySlot) {
      seen_slots_[i] = key;
      ++seen_count_;
      return true;
    }
  }
}

void StackStepper::expand(uint32_t state, uint32_t parent, StackSet& out) {
  work_.push_back({state, parent});
  while (!work_.empty()) {
    const StackTop top = work_.back();
    work_.pop_back();
    if (!insert_seen((uint64_t(top.state) << 32) | top.parent)) continue;
    if (++work_done_ > kMaxExpansionWork) {
      work_.clear();
      out.overflowed = true;
      break;
    }
    const GrammarState& st = g_->states[top.state];
    if (st.has_byte_edges()) out.tops.push_back(top);
    if (st.accepting) {
      if (top.parent == kRootBottom) {
        out.can_end = true;
      } else if (top.parent == kUnknownBottom) {
        out.escaped = true;
        if (std::find(out.escaped_rules.begin(), out.escaped_rules.end(), st.rule_id) == out.escaped_rules.end()) {
          out.escaped_rules.push_back(st.rule_id);
        }
      } else {
        const StackFrame f = (*pool_)[top.parent];
        work_.push_back({f.state, f.parent});
      }
    }
    for (uint32_t i = st.rule_edges_begin; i < st.rule_edges_end; ++i) {
      const RuleEdge e = g_->rule_edges[i];
      // A return into a state that only ends its rule goes straight on to the frame below (a tail call), so that
      // stacks differing only in such frames are one: right recursion keeps a number of stacks linear in its depth.
      // Not above an unknown caller, whose escape names the rule it leaves.
      const GrammarState& t = g_->states[e.target];
      const bool tail = t.accepting && !t.has_byte_edges() && !t.has_rule_edges() && top.parent != kUnknownBottom;
      const uint32_t ret = tail ? top.parent : pool_->intern(e.target, top.parent);
      work_.push_back({g_->rules[e.rule_id].start_state, ret});
    }
  }
}

void StackStepper::start(uint32_t state, uint32_t parent, StackSet& out) {
  out.clear();
  clear_seen();
  expand(state, parent, out);
}

void StackStepper::step(const StackSet& in, uint8_t byte, StackSet& out) {
  out.clear();
  if (in.overflowed) {
    out.overflowed = true;
    return;
  }
  if (in.tops.empty()) return;
  if (in.tops.size() == 1) {
    // One stack (the common case): a target that only consumes bytes needs no expansion or duplicate check.
    const StackTop top = in.tops[0];
    const uint32_t next = g_->next_state(top.state, byte);
    if (next == kNoState) return;
    const GrammarState& st = g_->states[next];
    if (!st.accepting && !st.has_rule_edges()) {
      out.tops.push_back({next, top.parent});
      return;
    }
    clear_seen();
    expand(next, top.parent, out);
    return;
  }
  clear_seen();
  for (const StackTop& top : in.tops) {
    const uint32_t next = g_->next_state(top.state, byte);
    if (next != kNoState) expand(next, top.parent, out);
  }
}

}  // namespace pagoda::grammar
