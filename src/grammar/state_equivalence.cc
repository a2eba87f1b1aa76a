// same_behaviour_depth and state_local_key (state_equivalence.h): a breadth-first walk over pairs of states, by
// bytes read (0-1: a call's return states pair at the depth of the call), stopping at the first depth where a
// pair differs.
#include "grammar/state_equivalence.h"

#include <algorithm>
#include <deque>
#include <vector>

#include "grammar/stack_pool.h"

namespace pagoda::grammar {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}

// Pair of states -> the smallest depth it was queued at: open addressing over a power-of-two table (a compare
// queues thousands of pairs, each looked up twice).
class PairDepths {
 public:
  PairDepths() : keys_(64, kEmpty), depths_(64, 0) {}
  // The slot of `key`, inserted with `depth` when absent; `fresh` says whether it was.
  uint32_t& find_or_insert(uint64_t key, uint32_t depth, bool& fresh) {
    if ((count_ + 1) * 2 > keys_.size()) grow();
    const size_t mask = keys_.size() - 1;
    for (size_t i = size_t(stack_key_hash(key)) & mask;; i = (i + 1) & mask) {
      if (keys_[i] == key) {
        fresh = false;
        return depths_[i];
      }
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        depths_[i] = depth;
        ++count_;
        fresh = true;
        return depths_[i];
      }
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  void grow() {
    std::vector<uint64_t> keys(keys_.size() * 2, kEmpty);
    std::vector<uint32_t> depths(keys.size(), 0);
    const size_t mask = keys.size() - 1;
    for (size_t j = 0; j < keys_.size(); ++j) {
      if (keys_[j] == kEmpty) continue;
      size_t i = size_t(stack_key_hash(keys_[j])) & mask;
      while (keys[i] != kEmpty) i = (i + 1) & mask;
      keys[i] = keys_[j];
      depths[i] = depths_[j];
    }
    keys_ = std::move(keys);
    depths_ = std::move(depths);
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> depths_;
  size_t count_ = 0;
};

}  // namespace

uint64_t state_local_key(const Grammar& grammar, uint32_t state) {
  const GrammarState& s = grammar.states[state];
  uint64_t h = mix(s.rule_id, uint64_t(s.accepting) | uint64_t(s.has_byte_edges()) << 1);
  uint64_t bits = 0;
  const uint32_t* next = grammar.next_states_of(state);
  for (uint32_t c = 0; c < grammar.num_byte_classes; ++c) {
    bits = bits << 1 | uint64_t(next[c] != kNoState);
    if ((c & 63) == 63) h = mix(h, bits);
  }
  h = mix(h, bits);
  for (const RuleEdge& e : grammar.rule_edges_of(state)) h = mix(h, e.rule_id);
  return h;
}

uint32_t same_behaviour_depth(const Grammar& grammar, uint32_t p, uint32_t q, uint32_t limit, uint32_t max_pairs) {
  if (grammar.states[p].rule_id != grammar.states[q].rule_id) return 0;
  struct Pair {
    uint32_t a, b, depth;
  };
  std::deque<Pair> work;
  PairDepths best;
  auto queue = [&](uint32_t a, uint32_t b, uint32_t depth, bool front) {
    if (a == b) return;  // the same state reads alike below, at any depth
    const uint64_t key = uint64_t(a) << 32 | b;
    bool fresh = false;
    uint32_t& queued_at = best.find_or_insert(key, depth, fresh);
    if (!fresh) {
      if (queued_at <= depth) return;
      queued_at = depth;
    }
    if (front) {
      work.push_front({a, b, depth});
    } else {
      work.push_back({a, b, depth});
    }
  };
  uint32_t same = limit;
  uint32_t pairs = 0;
  const uint32_t classes = grammar.num_byte_classes;
  queue(p, q, 0, false);
  while (!work.empty()) {
    const Pair pair = work.front();
    work.pop_front();
    if (pair.depth >= same) break;  // the queue is in depth order: nothing left can lower `same`
    bool fresh = false;
    if (best.find_or_insert(uint64_t(pair.a) << 32 | pair.b, pair.depth, fresh) < pair.depth) continue;
    if (++pairs > max_pairs) return pair.depth;
    const GrammarState& sa = grammar.states[pair.a];
    const GrammarState& sb = grammar.states[pair.b];
    const auto ra = grammar.rule_edges_of(pair.a), rb = grammar.rule_edges_of(pair.b);
    if (sa.accepting != sb.accepting || sa.has_byte_edges() != sb.has_byte_edges() || ra.size() != rb.size())
      return pair.depth;
    for (size_t i = 0; i < ra.size(); ++i) {
      if (ra[i].rule_id != rb[i].rule_id) return pair.depth;
      queue(ra[i].target, rb[i].target, pair.depth, true);
    }
    const uint32_t* na = grammar.next_states_of(pair.a);
    const uint32_t* nb = grammar.next_states_of(pair.b);
    for (uint32_t c = 0; c < classes; ++c) {
      if ((na[c] == kNoState) != (nb[c] == kNoState)) {
        same = std::min(same, pair.depth + 1);  // a string of depth + 1 bytes tells them apart
      } else if (na[c] != kNoState && pair.depth + 1 < same) {
        queue(na[c], nb[c], pair.depth + 1, false);
      }
    }
  }
  return same;
}

}  // namespace pagoda::grammar
