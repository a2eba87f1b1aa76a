// GrammarBuilder (grammar_builder.h): expression storage, the choice of shared pieces, the Thompson lowering of each
// rule body to an NFA, the subset construction of each rule's DFA, and the whole-grammar passes: liveness and
// reachability (pruning), nullability, the left-recursion check, shortest completions, byte classes.
#include "grammar/grammar_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <unordered_map>

namespace pagoda::grammar {
namespace {

constexpr uint32_t kEpsilon = 0xFFFFFFFF;
constexpr uint32_t kRuleLabel = 0x10000;  // labels below: a byte range lo | hi << 8; above: kRuleLabel + rule id
constexpr int32_t kMaxExprDepth = 2000;

// Ids grouped by a key in [0, num_keys), in one array (a counting sort): the reverse edges of a whole grammar
// without an allocation per state.
struct GroupedIds {
  std::vector<uint32_t> begin;  // [num_keys + 1]
  std::vector<uint32_t> ids;
  std::span<const uint32_t> of(uint32_t key) const { return {ids.data() + begin[key], begin[key + 1] - begin[key]}; }
};

// `for_each(emit)` calls emit(key, id) for every pair; it is called twice (a count, then a fill), alike each time.
template <class ForEach>
GroupedIds group_ids(uint32_t num_keys, const ForEach& for_each) {
  GroupedIds out;
  out.begin.assign(size_t(num_keys) + 1, 0);
  for_each([&](uint32_t key, uint32_t) { ++out.begin[size_t(key) + 1]; });
  for (uint32_t k = 0; k < num_keys; ++k) out.begin[k + 1] += out.begin[k];
  out.ids.resize(out.begin[num_keys]);
  std::vector<uint32_t> next(out.begin.begin(), out.begin.end() - 1);
  for_each([&](uint32_t key, uint32_t id) { out.ids[next[key]++] = id; });
  return out;
}

}  // namespace

namespace nfa_detail {
struct NfaEdge {
  uint32_t from, to, label;
};
// One rule's DFA before global numbering.
struct LocalDfa {
  struct State {
    bool accepting = false;
    std::vector<ByteEdge> bytes;  // targets are local ids
    std::vector<RuleEdge> rules;  // rule ids are builder ids; targets local ids
  };
  std::vector<State> states;  // state 0 is the start
};
}  // namespace nfa_detail
using nfa_detail::LocalDfa;
using nfa_detail::NfaEdge;

class NfaLowering;
// The DFA of a call-free item that a counted repeat copies many times (copying its few DFA states instead of its
// Thompson NFA: a JSON string character is about 15 DFA states against 200 NFA states); nullptr when the item
// calls a rule or its DFA would not be smaller. Sets nfa.failed when a limit is passed.
const LocalDfa* repeated_item_dfa(NfaLowering& nfa, int32_t item, int32_t depth);
// Emits `dfa` into `nfa` from `from`: one NFA state per DFA state, accepting ones to a new end state it returns.
uint32_t emit_dfa(NfaLowering& nfa, const LocalDfa& dfa, uint32_t from);
// Lowers the intersection of `items` (each regular) into `nfa` between `from` and a new end state it returns, as
// the product of the items' DFAs; kNoState (and nfa.failed) when an item calls a rule or a limit is passed. With
// `negate_last`, the last item's complement takes its place (a difference: the others minus the last).
uint32_t lower_intersection(NfaLowering& nfa, const std::vector<int32_t>& items, uint32_t from, int32_t depth,
                            bool negate_last = false);

// The lowering of one rule body to an NFA; a friend of GrammarBuilder (reads its nodes).
class NfaLowering {
 public:
  NfaLowering(const GrammarBuilder& builder, uint64_t state_budget, CompileBudget& work)
      : b_(builder), budget_(state_budget), work_(work) {}

  // Builds the NFA of `body`: state 0 the start, `accept` the single accepting state.
  bool lower(GrammarBuilder::Expr body, int32_t depth = 0) {
    edges.clear();
    num_states = 0;
    body_ = body;
    const uint32_t start = new_state();
    accept = emit(body, start, depth);
    return !failed;
  }
  // shared_rule[e] >= 0: expression e is called as that rule (a builder rule id) instead of being inlined, except
  // as the body being lowered.
  void share(const std::vector<int32_t>* shared_rule) { shared_rule_ = shared_rule; }

  std::vector<NfaEdge> edges;
  uint32_t num_states = 0;
  uint32_t accept = 0;
  bool failed = false;
  std::string error;
  uint64_t total_states = 0;  // over every rule lowered by this object

 private:
  uint32_t new_state() {
    ++total_states;
    if (total_states > budget_ && !failed) {
      failed = true;
      error = fmt::format("grammar too large: more than {} automaton states before determinization", budget_);
    }
    if (!work_.charge(1)) failed = true;
    return num_states++;
  }
  void edge(uint32_t from, uint32_t to, uint32_t label) {
    if (!work_.charge(1)) failed = true;
    edges.push_back({from, to, label});
  }

  uint32_t emit(GrammarBuilder::Expr e, uint32_t from, int32_t depth) {
    if (failed) return from;
    if (depth > kMaxExprDepth) {
      failed = true;
      error = fmt::format("grammar expression nested deeper than {} levels", kMaxExprDepth);
      return from;
    }
    if (shared_rule_ && e != body_ && (*shared_rule_)[size_t(e)] >= 0) {
      const uint32_t end = new_state();
      edge(from, end, kRuleLabel + uint32_t((*shared_rule_)[size_t(e)]));
      return end;
    }
    const GrammarBuilder::Node& n = b_.nodes_[size_t(e)];
    using Kind = GrammarBuilder::Kind;
    switch (n.kind) {
      case Kind::kEmpty: return from;
      case Kind::kNothing: return new_state();  // unreachable end: the pruning pass removes the dead path
      case Kind::kBytes: {
        uint32_t cur = from;
        for (const char c : n.bytes) {
          const uint32_t next = new_state();
          const uint32_t byte = uint8_t(c);
          edge(cur, next, byte | (byte << 8));
          cur = next;
          if (failed) break;
        }
        return cur;
      }
      case Kind::kByteSet: {
        const uint32_t end = new_state();
        for (uint32_t lo = 0; lo < 256;) {
          if (!n.byte_set.test(lo)) {
            ++lo;
            continue;
          }
          uint32_t hi = lo;
          while (hi + 1 < 256 && n.byte_set.test(hi + 1)) ++hi;
          edge(from, end, lo | (hi << 8));
          lo = hi + 1;
        }
        return end;
      }
      case Kind::kCodePoints: {
        const uint32_t end = new_state();
        for (const Utf8Sequence& seq : utf8_sequences(n.code_points)) {
          uint32_t cur = from;
          for (int32_t i = 0; i < seq.length; ++i) {
            const uint32_t next = i + 1 == seq.length ? end : new_state();
            edge(cur, next, uint32_t(seq.lo[size_t(i)]) | (uint32_t(seq.hi[size_t(i)]) << 8));
            cur = next;
          }
          if (failed) break;
        }
        return end;
      }
      case Kind::kSequence: {
        uint32_t cur = from;
        for (const GrammarBuilder::Expr child : n.children) cur = emit(child, cur, depth + 1);
        return cur;
      }
      case Kind::kChoice: {
        const uint32_t end = new_state();
        for (const GrammarBuilder::Expr child : n.children) {
          const uint32_t start = new_state();
          edge(from, start, kEpsilon);
          edge(emit(child, start, depth + 1), end, kEpsilon);
          if (failed) break;
        }
        return end;
      }
      case Kind::kRepeat: {
        const GrammarBuilder::Expr child = n.children[0];
        const uint64_t copies = n.max == kUnbounded ? uint64_t(n.min) + 1 : n.max;
        const LocalDfa* item_dfa = copies >= kDfaCopiesFrom ? repeated_item_dfa(*this, child, depth + 1) : nullptr;
        if (failed) return from;
        auto emit_item = [&](uint32_t at) {
          return item_dfa ? emit_dfa(*this, *item_dfa, at) : emit(child, at, depth + 1);
        };
        uint32_t cur = from;
        for (uint32_t i = 0; i < n.min && !failed; ++i) cur = emit_item(cur);
        if (n.max == kUnbounded) {
          // A loop head: the item's end leads back to it; leaving is always possible here.
          const uint32_t head = new_state();
          edge(cur, head, kEpsilon);
          edge(emit_item(head), head, kEpsilon);
          return head;
        }
        // Optional copies chained: x{0,3} = (x (x (x)?)?)?; each copy may exit to the common end.
        const uint32_t end = new_state();
        for (uint32_t i = n.min; i < n.max && !failed; ++i) {
          edge(cur, end, kEpsilon);
          cur = emit_item(cur);
        }
        edge(cur, end, kEpsilon);
        return end;
      }
      case Kind::kRule: {
        const uint32_t end = new_state();
        edge(from, end, kRuleLabel + uint32_t(n.rule_id));
        return end;
      }
      case Kind::kIntersection:
      case Kind::kDifference: {
        const uint32_t end = lower_intersection(*this, n.children, from, depth + 1, n.kind == Kind::kDifference);
        return end == kNoState ? from : end;
      }
    }
    return from;
  }

  void fail(std::string message) {
    if (!failed) error = std::move(message);
    failed = true;
  }

  // A repeat copies its item through the item's DFA from this many copies on.
  static constexpr uint64_t kDfaCopiesFrom = 4;

  const GrammarBuilder& b_;
  uint64_t budget_;
  CompileBudget& work_;
  const std::vector<int32_t>* shared_rule_ = nullptr;
  GrammarBuilder::Expr body_ = -1;
  // repeated_item_dfa's results by item (nullptr: copy the item's NFA).
  std::unordered_map<int32_t, std::unique_ptr<LocalDfa>> item_dfas_;
  friend uint32_t lower_intersection(NfaLowering&, const std::vector<int32_t>&, uint32_t, int32_t, bool);
  friend const LocalDfa* repeated_item_dfa(NfaLowering&, int32_t, int32_t);
  friend uint32_t emit_dfa(NfaLowering&, const LocalDfa&, uint32_t);
};

namespace {

// Subset construction of one rule's NFA.
class Determinizer {
 public:
  Determinizer(const NfaLowering& nfa, uint64_t& dfa_budget_left, CompileBudget& work)
      : budget_left_(dfa_budget_left), work_(work) {
    const uint32_t n = nfa.num_states;
    accept_ = nfa.accept;
    // CSR adjacency: epsilon edges and labelled edges separately.
    eps_begin_.assign(n + 1, 0);
    lab_begin_.assign(n + 1, 0);
    for (const NfaEdge& e : nfa.edges) (e.label == kEpsilon ? eps_begin_ : lab_begin_)[e.from + 1]++;
    for (uint32_t i = 0; i < n; ++i) {
      eps_begin_[i + 1] += eps_begin_[i];
      lab_begin_[i + 1] += lab_begin_[i];
    }
    eps_to_.resize(eps_begin_[n]);
    lab_.resize(lab_begin_[n]);
    std::vector<uint32_t> eps_fill(eps_begin_.begin(), eps_begin_.end() - 1);
    std::vector<uint32_t> lab_fill(lab_begin_.begin(), lab_begin_.end() - 1);
    for (const NfaEdge& e : nfa.edges) {
      if (e.label == kEpsilon) {
        eps_to_[eps_fill[e.from]++] = e.to;
      } else {
        lab_[lab_fill[e.from]++] = {e.to, e.label};
      }
    }
    mark_.assign(n, 0);
  }

  // Returns false when the DFA state budget runs out or the work budget says stop.
  bool run(LocalDfa& dfa) {
    targets_.assign(1, 0);
    if (intern(closure(targets_), dfa) == kNoState) return false;
    for (uint32_t next = 0; next + 1 < set_begin_.size(); ++next) {
      set_.assign(pool_.begin() + set_begin_[next], pool_.begin() + set_begin_[next + 1]);  // pool_ grows below
      if (!work_.charge(set_.size())) return false;
      LocalDfa::State state;
      state.accepting = std::binary_search(set_.begin(), set_.end(), accept_);
      // Byte edges: split 0..255 at every edge boundary; each piece maps to the closure of its targets.
      byte_edges_.clear();
      rule_edges_.clear();
      for (const uint32_t s : set_) {
        for (uint32_t i = lab_begin_[s]; i < lab_begin_[s + 1]; ++i) {
          const auto [to, label] = lab_[i];
          if (label >= kRuleLabel) {
            rule_edges_.push_back({label - kRuleLabel, to});
          } else {
            byte_edges_.push_back({uint8_t(label & 0xFF), uint8_t(label >> 8), to});
          }
        }
      }
      points_.clear();
      for (const Lab& e : byte_edges_) {
        points_.push_back(e.lo);
        points_.push_back(uint32_t(e.hi) + 1);
      }
      std::sort(points_.begin(), points_.end());
      points_.erase(std::unique(points_.begin(), points_.end()), points_.end());
      if (!work_.charge(byte_edges_.size() + rule_edges_.size() + points_.size())) return false;
      prev_targets_.clear();
      for (size_t p = 0; p + 1 < points_.size(); ++p) {
        const uint32_t lo = points_[p], hi = points_[p + 1] - 1;
        if (!work_.charge(byte_edges_.size())) return false;
        targets_.clear();
        for (const Lab& e : byte_edges_) {
          if (e.lo <= lo && lo <= e.hi) targets_.push_back(e.to);
        }
        if (targets_.empty()) {
          prev_targets_.clear();
          continue;
        }
        std::sort(targets_.begin(), targets_.end());
        targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
        if (!state.bytes.empty() && targets_ == prev_targets_ && state.bytes.back().hi + 1u == lo) {
          state.bytes.back().hi = uint8_t(hi);
          continue;
        }
        const uint32_t to = intern(closure(targets_), dfa);
        if (to == kNoState) return false;
        state.bytes.push_back({uint8_t(lo), uint8_t(hi), to});
        std::swap(prev_targets_, targets_);
      }
      std::sort(rule_edges_.begin(), rule_edges_.end());
      for (size_t i = 0; i < rule_edges_.size();) {
        size_t j = i;
        targets_.clear();
        while (j < rule_edges_.size() && rule_edges_[j].first == rule_edges_[i].first)
          targets_.push_back(rule_edges_[j++].second);
        std::sort(targets_.begin(), targets_.end());
        targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
        const uint32_t to = intern(closure(targets_), dfa);
        if (to == kNoState) return false;
        state.rules.push_back({rule_edges_[i].first, to});
        i = j;
      }
      dfa.states[next] = std::move(state);
    }
    return true;
  }

 private:
  struct Lab {
    uint8_t lo, hi;
    uint32_t to;
  };

  // The epsilon closure of `seed`, as the sorted states that tell DFA states apart; valid until the next call.
  const std::vector<uint32_t>& closure(const std::vector<uint32_t>& seed) {
    ++stamp_;
    closure_.clear();
    stack_.assign(seed.begin(), seed.end());
    for (uint32_t s : seed) mark_[s] = stamp_;
    while (!stack_.empty()) {
      const uint32_t s = stack_.back();
      stack_.pop_back();
      closure_.push_back(s);
      work_.charge(1 + eps_begin_[s + 1] - eps_begin_[s]);  // a spent budget is seen by the caller's next charge
      for (uint32_t i = eps_begin_[s]; i < eps_begin_[s + 1]; ++i) {
        const uint32_t t = eps_to_[i];
        if (mark_[t] != stamp_) {
          mark_[t] = stamp_;
          stack_.push_back(t);
        }
      }
    }
    // Only states with labelled edges, and the accept state, tell DFA states apart: dropping the pure epsilon
    // states merges subsets that behave the same.
    std::erase_if(closure_, [&](uint32_t s) { return s != accept_ && lab_begin_[s] == lab_begin_[s + 1]; });
    std::sort(closure_.begin(), closure_.end());
    return closure_;
  }

  static uint64_t hash_of(const std::vector<uint32_t>& set) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t x : set) h = (h ^ x) * 0x100000001b3ull;
    return h ^ (h >> 29);
  }
  bool same(uint32_t id, const std::vector<uint32_t>& set) const {
    const uint32_t b = set_begin_[id], e = set_begin_[id + 1];
    return e - b == set.size() && std::equal(set.begin(), set.end(), pool_.begin() + b);
  }

  // The DFA state of `set` (new when not seen yet); kNoState when a budget runs out. The sets live once, in pool_,
  // found through an open-addressing table of their ids.
  uint32_t intern(const std::vector<uint32_t>& set, LocalDfa& dfa) {
    // Hashing and comparing the set, then storing it when it is new.
    if (!work_.charge(set.size())) return kNoState;
    const uint64_t h = hash_of(set);
    if (slots_.empty()) slots_.assign(64, 0);
    size_t mask = slots_.size() - 1;
    size_t i = size_t(h) & mask;
    for (; slots_[i] != 0; i = (i + 1) & mask) {
      const uint32_t id = slots_[i] - 1;
      if (hashes_[id] == h && same(id, set)) return id;
    }
    if (budget_left_ == 0) return kNoState;
    if (!work_.charge(2 * set.size())) return kNoState;
    --budget_left_;
    const uint32_t id = uint32_t(hashes_.size());
    pool_.insert(pool_.end(), set.begin(), set.end());
    set_begin_.push_back(uint32_t(pool_.size()));
    hashes_.push_back(h);
    slots_[i] = id + 1;
    if (hashes_.size() * 2 > slots_.size()) {
      slots_.assign(slots_.size() * 2, 0);
      mask = slots_.size() - 1;
      for (uint32_t k = 0; k < hashes_.size(); ++k) {
        size_t j = size_t(hashes_[k]) & mask;
        while (slots_[j] != 0) j = (j + 1) & mask;
        slots_[j] = k + 1;
      }
    }
    dfa.states.emplace_back();
    return id;
  }

  uint64_t& budget_left_;
  CompileBudget& work_;
  uint32_t accept_ = 0;
  std::vector<uint32_t> eps_begin_, eps_to_, lab_begin_;
  std::vector<std::pair<uint32_t, uint32_t>> lab_;  // (to, label)
  std::vector<uint32_t> mark_;
  uint32_t stamp_ = 0;
  // The subsets: set k is pool_[set_begin_[k], set_begin_[k + 1]); slots_ holds id + 1 (0: empty).
  std::vector<uint32_t> pool_, set_begin_{0};
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> slots_;
  // Scratch reused across states.
  std::vector<uint32_t> set_, targets_, prev_targets_, points_, closure_, stack_;
  std::vector<Lab> byte_edges_;
  std::vector<std::pair<uint32_t, uint32_t>> rule_edges_;  // (rule, to)
};

std::string escape_byte(uint8_t b) {
  if (b == '\\' || b == ']' || b == '[' || b == '-' || b == '"') return fmt::format("\\{}", char(b));
  if (b >= 0x20 && b < 0x7F) return std::string(1, char(b));
  return fmt::format("\\x{:02X}", b);
}

}  // namespace

uint32_t emit_dfa(NfaLowering& nfa, const LocalDfa& dfa, uint32_t from) {
  const uint32_t end = nfa.new_state();
  std::vector<uint32_t> state_of(dfa.states.size());
  for (uint32_t& s : state_of) s = nfa.new_state();
  nfa.edge(from, state_of[0], kEpsilon);
  for (size_t p = 0; p < dfa.states.size() && !nfa.failed; ++p) {
    const LocalDfa::State& st = dfa.states[p];
    for (const ByteEdge& e : st.bytes)
      nfa.edge(state_of[p], state_of[e.target], uint32_t(e.lo) | (uint32_t(e.hi) << 8));
    if (st.accepting) nfa.edge(state_of[p], end, kEpsilon);
  }
  return end;
}

const LocalDfa* repeated_item_dfa(NfaLowering& nfa, int32_t item, int32_t depth) {
  auto [it, fresh] = nfa.item_dfas_.try_emplace(item);
  if (!fresh) return it->second.get();
  NfaLowering lowered(nfa.b_, nfa.budget_, nfa.work_);
  lowered.share(nfa.shared_rule_);
  if (!lowered.lower(item, depth)) {
    nfa.fail(lowered.error);
    return nullptr;
  }
  for (const NfaEdge& e : lowered.edges) {
    if (e.label != kEpsilon && e.label >= kRuleLabel) return nullptr;  // calls a rule: copied as it is
  }
  // An item whose DFA is no smaller than its NFA (or blows up) is copied as its NFA.
  uint64_t dfa_budget = lowered.num_states;
  auto dfa = std::make_unique<LocalDfa>();
  Determinizer det(lowered, dfa_budget, nfa.work_);
  const bool small = det.run(*dfa);
  if (!nfa.work_.ok()) {
    nfa.failed = true;
    return nullptr;
  }
  if (!small) return nullptr;
  it->second = std::move(dfa);
  return it->second.get();
}

uint32_t lower_intersection(NfaLowering& nfa, const std::vector<int32_t>& items, uint32_t from, int32_t depth,
                            bool negate_last) {
  if (depth > kMaxExprDepth) {
    nfa.fail(fmt::format("grammar expression nested deeper than {} levels", kMaxExprDepth));
    return kNoState;
  }
  // Each item on its own: an NFA, then its DFA. (A spent work budget fails these too; build() reports it first.)
  std::vector<LocalDfa> dfas(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    NfaLowering item(nfa.b_, nfa.budget_, nfa.work_);
    if (!item.lower(items[i])) {
      nfa.fail(item.error);
      return kNoState;
    }
    for (const NfaEdge& e : item.edges) {
      if (e.label != kEpsilon && e.label >= kRuleLabel) {
        nfa.fail("an intersection of expressions that call rules (only regular ones can be intersected)");
        return kNoState;
      }
    }
    uint64_t dfa_budget = nfa.budget_;
    Determinizer det(item, dfa_budget, nfa.work_);
    if (!det.run(dfas[i])) {
      nfa.fail("grammar too large: an intersection's operand has too many automaton states");
      return kNoState;
    }
  }
  // The product, folded item by item: a state is a pair of states, an edge the overlap of two byte ranges.
  LocalDfa product = std::move(dfas[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    const LocalDfa& other = dfas[i];
    // A complemented operand: bytes it has no edge for lead to `dead`, a state that never accepts, and its
    // accepting states swap.
    const bool negated = negate_last && i + 1 == items.size();
    const uint32_t dead = uint32_t(other.states.size());
    LocalDfa next;
    std::unordered_map<uint64_t, uint32_t> ids;
    std::vector<std::pair<uint32_t, uint32_t>> pairs;
    auto id_of = [&](uint32_t a, uint32_t b) {
      const uint64_t key = (uint64_t(a) << 32) | b;
      auto [it, fresh] = ids.try_emplace(key, uint32_t(pairs.size()));
      if (fresh) {
        pairs.push_back({a, b});
        next.states.emplace_back();
      }
      return it->second;
    };
    id_of(0, 0);
    for (size_t p = 0; p < pairs.size(); ++p) {
      const auto [a, b] = pairs[p];
      const LocalDfa::State& sa = product.states[a];
      static const LocalDfa::State kDeadState;
      const LocalDfa::State& sb = b == dead ? kDeadState : other.states[b];
      if (!nfa.work_.charge(1 + sa.bytes.size() * (sb.bytes.size() + 1)) || pairs.size() > nfa.budget_) {
        nfa.fail(fmt::format("grammar too large: an intersection of more than {} states", nfa.budget_));
        return kNoState;
      }
      LocalDfa::State st;
      st.accepting = sa.accepting && (negated ? !sb.accepting : sb.accepting);
      for (const ByteEdge& ea : sa.bytes) {
        uint32_t uncovered_from = ea.lo;  // sb's edges are disjoint and sorted: the gaps between them go to `dead`
        for (const ByteEdge& eb : sb.bytes) {
          const uint8_t lo = std::max(ea.lo, eb.lo), hi = std::min(ea.hi, eb.hi);
          if (lo > hi) continue;
          if (negated && lo > uncovered_from)
            st.bytes.push_back({uint8_t(uncovered_from), uint8_t(lo - 1), id_of(ea.target, dead)});
          st.bytes.push_back({lo, hi, id_of(ea.target, eb.target)});
          uncovered_from = uint32_t(hi) + 1;
        }
        if (negated && uncovered_from <= ea.hi)
          st.bytes.push_back({uint8_t(uncovered_from), ea.hi, id_of(ea.target, dead)});
      }
      next.states[p] = std::move(st);
    }
    product = std::move(next);
  }
  // Into the rule's NFA: one state per product state, the start reached from `from`, accepting ones to the end.
  const uint32_t end = emit_dfa(nfa, product, from);
  return nfa.failed ? kNoState : end;
}

// ---- CompileBudget ----

void CompileBudget::poll() {
  constexpr uint64_t kPollEvery = 1 << 16;                           // about a millisecond of work
  next_poll_ = std::min(spent_ + kPollEvery, limits_.max_work + 1);  // the limit is seen as soon as it is passed
  if (!status_.ok()) return;
  if (spent_ > limits_.max_work) {
    status_ = make_error(fmt::format("grammar too complex: compiling it takes more than {} steps (the compile's work "
                                     "limit; nested counted repeats and large alternations cost the most)",
                                     limits_.max_work),
                         StatusCode::kInvalidArgument);
  } else if (limits_.should_stop && limits_.should_stop()) {
    status_ = make_error("the grammar's compile was stopped", StatusCode::kCancelled);
  }
}

// ---- Expressions ----

GrammarBuilder::Expr GrammarBuilder::add(Node node) {
  nodes_.push_back(std::move(node));
  return Expr(nodes_.size() - 1);
}

int32_t GrammarBuilder::add_rule(std::string name) {
  const int32_t id = int32_t(rules_.size());
  rule_ids_.emplace(name, id);  // a duplicate name keeps its first rule (front ends check for duplicates)
  rules_.push_back({std::move(name), -1});
  return id;
}

std::optional<int32_t> GrammarBuilder::find_rule(std::string_view name) const {
  auto it = rule_ids_.find(std::string(name));
  if (it == rule_ids_.end()) return std::nullopt;
  return it->second;
}

std::string GrammarBuilder::unique_rule_name(std::string_view base) {
  std::string name(base);
  uint32_t& next = name_counters_[name];
  while (find_rule(name)) name = fmt::format("{}-{}", base, ++next);
  return name;
}

void GrammarBuilder::set_body(int32_t rule_id, Expr body) { rules_[size_t(rule_id)].body = body; }

GrammarBuilder::Expr GrammarBuilder::empty() { return add(Node{}); }
GrammarBuilder::Expr GrammarBuilder::nothing() {
  Node n;
  n.kind = Kind::kNothing;
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::literal(std::string_view bytes) {
  if (bytes.empty()) return empty();
  Node n;
  n.kind = Kind::kBytes;
  n.bytes = std::string(bytes);
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::byte_range(uint8_t lo, uint8_t hi) {
  std::bitset<256> set;
  for (uint32_t b = lo; b <= hi; ++b) set.set(b);
  return byte_set(set);
}
GrammarBuilder::Expr GrammarBuilder::byte_set(const std::bitset<256>& bytes) {
  if (bytes.none()) return nothing();
  Node n;
  n.kind = Kind::kByteSet;
  n.byte_set = bytes;
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::code_points(const CodePointSet& set) {
  if (set.empty()) return nothing();
  Node n;
  n.kind = Kind::kCodePoints;
  n.code_points = set;
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::sequence(std::vector<Expr> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return items[0];
  Node n;
  n.kind = Kind::kSequence;
  n.children = std::move(items);
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::choice(std::vector<Expr> alternatives) {
  if (alternatives.empty()) return nothing();
  if (alternatives.size() == 1) return alternatives[0];
  Node n;
  n.kind = Kind::kChoice;
  n.children = std::move(alternatives);
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::repeat(Expr item, uint32_t min, uint32_t max) {
  if (max != kUnbounded && max < min) return nothing();
  if (max == 0) return empty();
  if (min == 1 && max == 1) return item;
  Node n;
  n.kind = Kind::kRepeat;
  n.children = {item};
  n.min = min;
  n.max = max;
  return add(std::move(n));
}
GrammarBuilder::Expr GrammarBuilder::intersection(std::vector<Expr> items) {
  if (items.empty()) return empty();
  if (items.size() == 1) return items[0];
  Node n;
  n.kind = Kind::kIntersection;
  n.children = std::move(items);
  return add(std::move(n));
}

GrammarBuilder::Expr GrammarBuilder::difference(Expr item, Expr removed) {
  Node n;
  n.kind = Kind::kDifference;
  n.children = {item, removed};
  return add(std::move(n));
}

GrammarBuilder::Expr GrammarBuilder::rule_ref(int32_t rule_id) {
  Node n;
  n.kind = Kind::kRule;
  n.rule_id = rule_id;
  return add(std::move(n));
}

// ---- build ----

Result<Grammar> GrammarBuilder::build(int32_t root_rule_id, const BuildLimits& limits) const {
  if (root_rule_id < 0 || root_rule_id >= num_rules()) return make_error("no root rule");
  // The rules reachable from the root through their bodies, in discovery order (the root first).
  std::vector<int32_t> order{root_rule_id};
  std::vector<int32_t> local_id(rules_.size(), -1);
  local_id[size_t(root_rule_id)] = 0;
  std::vector<uint32_t> seen(nodes_.size(), 0);  // stamp: the rule (index in order, + 1) that visited the node
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t rule = order[i];
    if (rules_[size_t(rule)].body < 0) {
      return make_error(fmt::format("rule '{}' is used but never defined", rules_[size_t(rule)].name),
                        StatusCode::kInvalidArgument);
    }
    std::vector<Expr> stack{rules_[size_t(rule)].body};
    while (!stack.empty()) {
      const Expr e = stack.back();
      stack.pop_back();
      if (seen[size_t(e)] == i + 1) continue;
      seen[size_t(e)] = uint32_t(i + 1);
      const Node& n = nodes_[size_t(e)];
      if (n.kind == Kind::kRule && local_id[size_t(n.rule_id)] < 0) {
        local_id[size_t(n.rule_id)] = int32_t(order.size());
        order.push_back(n.rule_id);
      }
      for (const Expr c : n.children) stack.push_back(c);
    }
  }

  // Shared pieces: an expression that calls rules (a parser-level piece, whose copies would not merge), is big and
  // is used in many places (nested optional object members written in every order a schema allows) becomes a
  // rule of its own, called where it is used, instead of being copied into every use: the automaton grows with
  // the number of uses rather than with their product. Regular pieces (the lexer's part) stay inline, where the
  // DFA merges their copies and token masks stay exact.
  std::vector<int32_t> shared_rule(nodes_.size(), -1);  // a builder rule id beyond rules_ when shared
  std::vector<Expr> shared_bodies;
  {
    constexpr uint64_t kMany = uint64_t(1) << 40;
    constexpr uint64_t kShareFromSize = 64;         // estimated automaton states of one copy...
    constexpr uint64_t kShareFromTotal = 1u << 14;  // ...and of all copies together
    auto add = [&](uint64_t a, uint64_t b) { return std::min(kMany, a + b); };
    auto times = [&](uint64_t a, uint64_t b) { return b != 0 && a > kMany / b ? kMany : a * b; };
    auto copies_of = [](const Node& n) -> uint64_t {
      return n.kind != Kind::kRepeat ? 1 : n.max == kUnbounded ? uint64_t(n.min) + 1 : std::max<uint64_t>(n.max, 1);
    };
    std::vector<uint64_t> size(nodes_.size(), 0), uses(nodes_.size(), 0);
    std::vector<uint8_t> calls(nodes_.size(), 0), in_intersection(nodes_.size(), 0);
    for (size_t e = 0; e < nodes_.size(); ++e) {  // children come before their parents
      if (!seen[e]) continue;
      const Node& n = nodes_[e];
      uint64_t sz = n.kind == Kind::kBytes ? n.bytes.size() + 1 : n.kind == Kind::kCodePoints ? 16 : 2;
      for (const Expr c : n.children) {
        sz = add(sz, n.kind == Kind::kRepeat ? times(size[size_t(c)], copies_of(n)) : size[size_t(c)]);
        if (n.kind != Kind::kIntersection && calls[size_t(c)]) calls[e] = 1;
      }
      if (n.kind == Kind::kRule) calls[e] = 1;
      size[e] = sz;
    }
    for (const int32_t r : order) uses[size_t(rules_[size_t(r)].body)] += 1;
    for (size_t e = nodes_.size(); e-- > 0;) {  // parents before their children
      if (!seen[e] || uses[e] == 0) continue;
      const Node& n = nodes_[e];
      uint64_t each = uses[e];
      if (uses[e] >= 2 && calls[e] && !in_intersection[e] && n.kind != Kind::kRule && size[e] >= kShareFromSize &&
          times(uses[e], size[e]) >= kShareFromTotal) {
        shared_rule[e] = int32_t(rules_.size() + shared_bodies.size());
        shared_bodies.push_back(Expr(e));
        each = 1;
      }
      for (const Expr c : n.children) {
        uses[size_t(c)] = add(uses[size_t(c)], times(each, copies_of(n)));
        if (n.kind == Kind::kIntersection || in_intersection[e]) in_intersection[size_t(c)] = 1;
      }
    }
  }
  local_id.resize(rules_.size() + shared_bodies.size(), -1);
  for (size_t k = 0; k < shared_bodies.size(); ++k) {
    local_id[rules_.size() + k] = int32_t(order.size());
    order.push_back(int32_t(rules_.size() + k));
  }
  auto body_of = [&](int32_t rule) {
    return size_t(rule) < rules_.size() ? rules_[size_t(rule)].body : shared_bodies[size_t(rule) - rules_.size()];
  };
  auto name_of = [&](int32_t rule) {
    return size_t(rule) < rules_.size() ? rules_[size_t(rule)].name
                                        : fmt::format("shared-{}", size_t(rule) - rules_.size());
  };

  // Lower and determinize each rule.
  CompileBudget budget(limits);
  std::vector<LocalDfa> dfas(order.size());
  NfaLowering lowering(*this, limits.max_nfa_states, budget);
  lowering.share(&shared_rule);
  uint64_t dfa_budget = limits.max_dfa_states;
  for (size_t r = 0; r < order.size(); ++r) {
    const bool lowered = lowering.lower(body_of(order[r]));
    if (!budget.ok()) return budget.status();
    if (!lowered) return make_error(lowering.error, StatusCode::kInvalidArgument);
    Determinizer det(lowering, dfa_budget, budget);
    const bool determinized = det.run(dfas[r]);
    if (!budget.ok()) return budget.status();
    if (!determinized) {
      return make_error(fmt::format("grammar too large: more than {} automaton states", limits.max_dfa_states),
                        StatusCode::kInvalidArgument);
    }
  }

  // Global numbering, before pruning.
  std::vector<uint32_t> base(order.size() + 1, 0);
  for (size_t r = 0; r < order.size(); ++r) base[r + 1] = base[r] + uint32_t(dfas[r].states.size());
  const uint32_t num_states = base.back();
  std::vector<uint32_t> rule_of(num_states);
  std::vector<uint8_t> accepting(num_states);
  struct CallEdge {
    uint32_t from, rule, to;
  };
  std::vector<CallEdge> calls;
  std::vector<std::pair<uint32_t, uint32_t>> byte_preds;  // (to, from)
  for (size_t r = 0; r < order.size(); ++r) {
    for (size_t s = 0; s < dfas[r].states.size(); ++s) {
      const uint32_t g = base[r] + uint32_t(s);
      rule_of[g] = uint32_t(r);
      accepting[g] = dfas[r].states[s].accepting;
      for (ByteEdge& e : dfas[r].states[s].bytes) {
        e.target += base[r];
        byte_preds.push_back({e.target, g});
      }
      for (RuleEdge& e : dfas[r].states[s].rules) {
        e.rule_id = uint32_t(local_id[e.rule_id]);
        e.target += base[r];
        calls.push_back({g, e.rule_id, e.target});
      }
    }
  }
  auto state_ref = [&](uint32_t g) -> LocalDfa::State& { return dfas[rule_of[g]].states[g - base[rule_of[g]]]; };

  // Liveness: a state is live when an accepting state of its rule is reachable through byte edges and calls of
  // rules whose start is live. Worklist over reverse edges.
  const GroupedIds byte_preds_of = group_ids(num_states, [&](const auto& emit) {
    for (const auto& [to, from] : byte_preds) emit(to, from);
  });
  const GroupedIds calls_by_target = group_ids(num_states, [&](const auto& emit) {
    for (uint32_t i = 0; i < calls.size(); ++i) emit(calls[i].to, i);
  });
  std::vector<std::vector<uint32_t>> calls_by_rule(order.size());
  for (uint32_t i = 0; i < calls.size(); ++i) calls_by_rule[calls[i].rule].push_back(i);
  std::vector<uint8_t> live(num_states, 0);
  std::vector<uint32_t> work;
  auto make_live = [&](uint32_t s) {
    if (!live[s]) {
      live[s] = 1;
      work.push_back(s);
    }
  };
  for (uint32_t s = 0; s < num_states; ++s) {
    if (accepting[s]) make_live(s);
  }
  while (!work.empty()) {
    const uint32_t x = work.back();
    work.pop_back();
    for (const uint32_t p : byte_preds_of.of(x)) make_live(p);
    for (const uint32_t c : calls_by_target.of(x)) {
      if (live[base[calls[c].rule]]) make_live(calls[c].from);
    }
    if (x == base[rule_of[x]]) {  // x starts its rule: its callers may now be live
      for (const uint32_t c : calls_by_rule[rule_of[x]]) {
        if (live[calls[c].to]) make_live(calls[c].from);
      }
    }
  }
  if (!live[base[0]]) {
    return make_error(fmt::format("rule '{}' matches no string", rules_[size_t(root_rule_id)].name),
                      StatusCode::kInvalidArgument);
  }

  // Prune dead edges, then keep what is reachable from the root's start.
  for (uint32_t s = 0; s < num_states; ++s) {
    LocalDfa::State& st = state_ref(s);
    std::erase_if(st.bytes, [&](const ByteEdge& e) { return !live[e.target]; });
    std::erase_if(st.rules, [&](const RuleEdge& e) { return !live[e.target] || !live[base[e.rule_id]]; });
  }
  std::vector<uint32_t> new_id(num_states, kNoState);
  std::vector<uint32_t> kept;  // old ids in new order
  std::vector<uint32_t> new_rule_id(order.size(), kNoState);
  std::vector<uint32_t> kept_rules;
  auto visit = [&](uint32_t s) {
    if (new_id[s] == kNoState) {
      new_id[s] = uint32_t(kept.size());
      kept.push_back(s);
    }
  };
  auto visit_rule = [&](uint32_t r) {
    if (new_rule_id[r] == kNoState) {
      new_rule_id[r] = uint32_t(kept_rules.size());
      kept_rules.push_back(r);
      visit(base[r]);
    }
  };
  visit_rule(0);
  for (size_t i = 0; i < kept.size(); ++i) {
    const LocalDfa::State& st = state_ref(kept[i]);
    for (const ByteEdge& e : st.bytes) visit(e.target);
    for (const RuleEdge& e : st.rules) {
      visit_rule(e.rule_id);
      visit(e.target);
    }
  }

  Grammar g;
  g.root_rule = 0;
  g.rules.resize(kept_rules.size());
  for (size_t r = 0; r < kept_rules.size(); ++r) {
    g.rules[r].name = name_of(order[kept_rules[r]]);
    g.rules[r].start_state = new_id[base[kept_rules[r]]];
  }
  g.states.resize(kept.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    const LocalDfa::State& st = state_ref(kept[i]);
    GrammarState& out = g.states[i];
    out.rule_id = new_rule_id[rule_of[kept[i]]];
    out.accepting = accepting[kept[i]];
    out.byte_edges_begin = uint32_t(g.byte_edges.size());
    for (const ByteEdge& e : st.bytes) g.byte_edges.push_back({e.lo, e.hi, new_id[e.target]});
    out.byte_edges_end = uint32_t(g.byte_edges.size());
    out.rule_edges_begin = uint32_t(g.rule_edges.size());
    for (const RuleEdge& e : st.rules) g.rule_edges.push_back({new_rule_id[e.rule_id], new_id[e.target]});
    out.rule_edges_end = uint32_t(g.rule_edges.size());
  }
  dfas.clear();
  const uint32_t n = uint32_t(g.states.size());
  auto start_of = [&](uint32_t rule) { return g.rules[rule].start_state; };

  // Nullability (fixpoint; calls of nullable rules are the only epsilon moves).
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = n; s-- > 0;) {
      GrammarState& st = g.states[s];
      if (st.nullable) continue;
      bool nullable = st.accepting;
      for (const RuleEdge& e : g.rule_edges_of(s)) {
        if (g.states[start_of(e.rule_id)].nullable && g.states[e.target].nullable) nullable = true;
      }
      if (nullable) st.nullable = changed = true;
    }
  }

  // Left recursion: rule A calls B before consuming a byte. A cycle of such calls would push frames forever.
  const size_t num_rules = g.rules.size();
  std::vector<std::vector<uint32_t>> left_calls(num_rules);
  std::vector<uint32_t> reached(n, 0);  // stamp: r + 1 when reached from rule r's start without a byte
  for (uint32_t r = 0; r < num_rules; ++r) {
    std::vector<uint32_t> stack{start_of(r)};
    reached[start_of(r)] = r + 1;
    while (!stack.empty()) {
      const uint32_t s = stack.back();
      stack.pop_back();
      for (const RuleEdge& e : g.rule_edges_of(s)) {
        left_calls[r].push_back(e.rule_id);
        if (g.states[start_of(e.rule_id)].nullable && reached[e.target] != r + 1) {
          reached[e.target] = r + 1;
          stack.push_back(e.target);
        }
      }
    }
    std::sort(left_calls[r].begin(), left_calls[r].end());
    left_calls[r].erase(std::unique(left_calls[r].begin(), left_calls[r].end()), left_calls[r].end());
  }
  {
    std::vector<uint8_t> color(num_rules, 0);  // 0 new, 1 on the path, 2 done
    std::vector<uint32_t> path;
    std::string cycle;
    std::function<bool(uint32_t)> dfs = [&](uint32_t r) {
      color[r] = 1;
      path.push_back(r);
      for (const uint32_t c : left_calls[r]) {
        if (color[c] == 1) {
          auto from = std::find(path.begin(), path.end(), c);
          for (auto it = from; it != path.end(); ++it) cycle += g.rules[*it].name + " -> ";
          cycle += g.rules[c].name;
          return true;
        }
        if (color[c] == 0 && dfs(c)) return true;
      }
      path.pop_back();
      color[r] = 2;
      return false;
    };
    for (uint32_t r = 0; r < num_rules; ++r) {
      if (color[r] == 0 && dfs(r)) {
        return make_error(fmt::format("left recursion is not supported ({})", cycle), StatusCode::kInvalidArgument);
      }
    }
  }

  // Shortest completion of each state (bytes to the end of its rule): Knuth's generalization of Dijkstra.
  {
    constexpr uint32_t kInf = 0xFFFFFFFF;
    std::vector<uint32_t> dist(n, kInf);
    std::vector<uint8_t> done(n, 0);
    const GroupedIds byte_pred = group_ids(n, [&](const auto& emit) {
      for (uint32_t s = 0; s < n; ++s) {
        for (const ByteEdge& e : g.byte_edges_of(s)) emit(e.target, s);
      }
    });
    const GroupedIds call_pred = group_ids(n, [&](const auto& emit) {
      for (uint32_t i = 0; i < g.rule_edges.size(); ++i) emit(g.rule_edges[i].target, i);
    });
    const GroupedIds start_callers = group_ids(num_rules, [&](const auto& emit) {
      for (uint32_t i = 0; i < g.rule_edges.size(); ++i) emit(g.rule_edges[i].rule_id, i);
    });
    std::vector<uint32_t> edge_from(g.rule_edges.size());
    for (uint32_t s = 0; s < n; ++s) {
      for (uint32_t i = g.states[s].rule_edges_begin; i < g.states[s].rule_edges_end; ++i) edge_from[i] = s;
    }
    using Item = std::pair<uint32_t, uint32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> pq;
    auto relax = [&](uint32_t s, uint64_t d) {
      if (d < dist[s]) {
        dist[s] = uint32_t(std::min<uint64_t>(d, kInf - 1));
        pq.push({dist[s], s});
      }
    };
    for (uint32_t s = 0; s < n; ++s) {
      if (g.states[s].accepting) relax(s, 0);
    }
    while (!pq.empty()) {
      const auto [d, x] = pq.top();
      pq.pop();
      if (done[x] || d != dist[x]) continue;
      done[x] = 1;
      for (const uint32_t p : byte_pred.of(x)) relax(p, uint64_t(d) + 1);
      for (const uint32_t i : call_pred.of(x)) {
        const uint32_t sr = start_of(g.rule_edges[i].rule_id);
        if (dist[sr] != kInf) relax(edge_from[i], uint64_t(dist[sr]) + d);
      }
      if (x == start_of(g.states[x].rule_id)) {
        for (const uint32_t i : start_callers.of(g.states[x].rule_id)) {
          const uint32_t t = g.rule_edges[i].target;
          if (dist[t] != kInf) relax(edge_from[i], uint64_t(dist[t]) + d);
        }
      }
    }
    for (uint32_t s = 0; s < n; ++s) g.states[s].min_bytes = dist[s];
  }

  // Byte classes and the transition table.
  std::bitset<257> boundary;
  boundary.set(0);
  for (const ByteEdge& e : g.byte_edges) {
    boundary.set(e.lo);
    boundary.set(size_t(e.hi) + 1);
  }
  g.byte_class.resize(256);
  uint32_t cls = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    if (b > 0 && boundary.test(b)) ++cls;
    g.byte_class[b] = uint8_t(cls);
  }
  g.num_byte_classes = cls + 1;
  const uint64_t table_bytes = uint64_t(n) * g.num_byte_classes * sizeof(uint32_t);
  if (table_bytes > limits.max_table_bytes) {
    return make_error(fmt::format("grammar too large: {} states x {} byte classes", n, g.num_byte_classes),
                      StatusCode::kInvalidArgument);
  }
  g.transitions.reset(n, g.num_byte_classes);  // rows filled on first use
  return g;
}

// ---- Grammar::to_string ----

std::string Grammar::to_string() const {
  std::string out;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    out += fmt::format("{} ::= s{}\n", rules[r].name, rules[r].start_state);
  }
  for (uint32_t s = 0; s < states.size(); ++s) {
    out += fmt::format("  s{} ({}){}:", s, rules[states[s].rule_id].name, states[s].accepting ? " accept" : "");
    for (const ByteEdge& e : byte_edges_of(s)) {
      out += e.lo == e.hi ? fmt::format(" [{}]->s{}", escape_byte(e.lo), e.target)
                          : fmt::format(" [{}-{}]->s{}", escape_byte(e.lo), escape_byte(e.hi), e.target);
    }
    for (const RuleEdge& e : rule_edges_of(s)) out += fmt::format(" {}->s{}", rules[e.rule_id].name, e.target);
    out += '\n';
  }
  return out;
}

}  // namespace pagoda::grammar
