// build_state_token_mask (state_token_mask.h): one preorder walk of the vocabulary trie from a single state above
// an unknown caller, keeping two configurations per trie depth: the stacks still inside the state's rule (ctx),
// and those that left it and go on in some caller (ext). A subtree is accepted whole, unwalked, where a stack
// inside the rule stays in a state that takes every byte below it back to itself, or every ASCII byte below and
// every well-formed character where the subtree is well-formed UTF-8 (free string content in a byte-level BPE
// vocabulary); its tokens are kept as ranges of the sorted order until the mask is written. A depth with one stack
// inside and nothing outside is stepped through the byte table alone; the configurations outside are interned and
// their moves memoized, since a rule shared by many callers leaves into the same caller stacks under every node.
// build_state_token_mask_above walks only the subtrees that hold tokens of some length or more, and takes the
// shorter tokens' classes from another state's mask. A state that takes every token of the vocabulary's string
// slice back to itself (free string content) accepts the slice's bits at once and walks only the trie of the
// tokens outside it.
#include "grammar/state_token_mask.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <unordered_map>

#include "grammar/stack_set.h"
#include "grammar/utf8_automaton.h"

namespace pagoda::grammar {

ReturnSites ReturnSites::of(const Grammar& grammar) {
  ReturnSites r;
  r.by_rule.resize(grammar.rules.size());
  for (const RuleEdge& e : grammar.rule_edges) {
    r.by_rule[e.rule_id].push_back(e.target);
    if (e.rule_id == grammar.root_rule) r.root_is_called = true;
  }
  for (std::vector<uint32_t>& sites : r.by_rule) {
    std::sort(sites.begin(), sites.end());
    sites.erase(std::unique(sites.begin(), sites.end()), sites.end());
  }
  return r;
}

namespace {

// Whether `s` takes every well-formed multi-byte UTF-8 character and comes back to itself: a walk over the pairs
// (decoder state, grammar state) inside a character, from the lead bytes on.
bool takes_every_character(const Grammar& grammar, uint32_t s) {
  std::vector<std::pair<uint8_t, uint32_t>> seen{{utf8::kBoundary, s}}, work{{utf8::kBoundary, s}};
  while (!work.empty()) {
    const auto [k, q] = work.back();
    work.pop_back();
    for (uint32_t b = 0x80; b < 256; ++b) {
      const uint8_t nk = utf8::next(k, uint8_t(b));
      if (nk == utf8::kDead) continue;
      const uint32_t nq = grammar.next_state(q, uint8_t(b));
      if (nq == kNoState) return false;
      if (nk == utf8::kBoundary) {
        if (nq != s) return false;
        continue;
      }
      const std::pair<uint8_t, uint32_t> pair{nk, nq};
      if (std::find(seen.begin(), seen.end(), pair) == seen.end()) {
        seen.push_back(pair);
        work.push_back(pair);
      }
    }
  }
  return true;
}

// The vocabulary to walk from `s`: the tokens outside the string slice where `s` takes the slice (all accepted),
// else every token (nullptr).
const TokenVocabulary* outside_slice_of(const Grammar& grammar, const TokenVocabulary& vocab, uint32_t s) {
  return takes_string_slice(grammar, vocab, s) ? vocab.outside_string_slice() : nullptr;
}

// A walk's outcome: accepted tokens as ranges of sorted indices, ascending (a subtree accepted whole is one range,
// however many tokens it holds), and the uncertain ones.
struct WalkResult {
  std::vector<std::pair<uint32_t, uint32_t>> accepted;
  size_t num_accepted = 0;
  std::vector<int32_t> uncertain;
};

// The walk of the trie from `state`, classifying the tokens of at least `min_token_bytes` bytes (a subtree of
// shorter tokens only is skipped; a range accepted whole may still hold some, which are accepted indeed).
WalkResult walk_state(const Grammar& grammar, const ReturnSites& returns, const TokenVocabulary& vocab, uint32_t state,
                      uint32_t min_token_bytes) {
  const std::vector<TrieNode>& trie = vocab.trie();
  StackPool pool;
  StackStepper stepper(grammar, pool);
  const size_t max_depth = size_t(vocab.max_token_bytes()) + 1;
  // The bottom below a frame of `rule`: the grammar's end for an uncalled root, else an unknown caller.
  auto bottom_of = [&](uint32_t rule) {
    return rule == grammar.root_rule && !returns.root_is_called ? kRootBottom : kUnknownBottom;
  };
  std::vector<StackSet> ctx(max_depth);
  StackSet scratch;
  std::vector<uint32_t> expanded(grammar.rules.size(), 0);  // stamp: rule's callers already added at this depth
  uint32_t stamp = 0;
  std::vector<uint32_t> work;
  // Adds to `out` the continuations in the callers of the rules in `escaped`, and of their callers when those end.
  auto add_callers = [&](const std::vector<uint32_t>& escaped, StackSet& out) {
    ++stamp;
    work.assign(escaped.begin(), escaped.end());
    while (!work.empty()) {
      const uint32_t rule = work.back();
      work.pop_back();
      if (expanded[rule] == stamp) continue;
      expanded[rule] = stamp;
      if (rule == grammar.root_rule) out.can_end = true;  // a root frame may be the bottom one
      for (const uint32_t t : returns.by_rule[rule]) {
        stepper.start(t, bottom_of(grammar.states[t].rule_id), scratch);
        out.tops.insert(out.tops.end(), scratch.tops.begin(), scratch.tops.end());
        out.can_end = out.can_end || scratch.can_end;
        out.overflowed = out.overflowed || scratch.overflowed;
        work.insert(work.end(), scratch.escaped_rules.begin(), scratch.escaped_rules.end());
      }
    }
  };

  // The configurations outside the rule, interned (id 0: the empty one) with their moves memoized: a rule called
  // from many places (a JSON string or number shared by every property) leaves into the same caller stacks under
  // every node where it ends, and those stacks take the next bytes alike each time.
  std::vector<StackSet> outside_sets(1);
  std::unordered_map<uint64_t, std::vector<uint32_t>> outside_by_hash;
  std::unordered_map<uint64_t, uint32_t> outside_step, outside_union;
  std::map<std::vector<uint32_t>, uint32_t> outside_callers;
  auto intern_outside = [&](StackSet& set) -> uint32_t {
    std::sort(set.tops.begin(), set.tops.end(), [](const StackTop& a, const StackTop& b) {
      return a.state != b.state ? a.state < b.state : a.parent < b.parent;
    });
    set.tops.erase(std::unique(set.tops.begin(), set.tops.end()), set.tops.end());
    set.escaped = false;
    set.escaped_rules.clear();
    if (set.tops.empty() && !set.can_end && !set.overflowed) return 0;
    uint64_t h = uint64_t(set.can_end) | uint64_t(set.overflowed) << 1;
    for (const StackTop& t : set.tops) h = stack_key_hash(h ^ (uint64_t(t.state) << 32 | t.parent));
    std::vector<uint32_t>& same_hash = outside_by_hash[h];
    for (const uint32_t id : same_hash) {
      const StackSet& o = outside_sets[id];
      if (o.can_end == set.can_end && o.overflowed == set.overflowed && o.tops == set.tops) return id;
    }
    same_hash.push_back(uint32_t(outside_sets.size()));
    outside_sets.push_back(std::move(set));
    return uint32_t(outside_sets.size() - 1);
  };
  // The configuration in the callers of the rules in `rules` (and of their callers where those end).
  auto callers_outside = [&](const std::vector<uint32_t>& rules) -> uint32_t {
    std::vector<uint32_t> key = rules;
    std::sort(key.begin(), key.end());
    auto it = outside_callers.find(key);
    if (it != outside_callers.end()) return it->second;
    StackSet set;
    add_callers(key, set);
    const uint32_t id = intern_outside(set);
    outside_callers.emplace(std::move(key), id);
    return id;
  };
  StackSet outside_scratch;
  auto step_outside = [&](uint32_t id, uint8_t byte) -> uint32_t {
    if (id == 0) return 0;
    const uint64_t key = uint64_t(id) << 8 | byte;
    auto it = outside_step.find(key);
    if (it != outside_step.end()) return it->second;
    stepper.step(outside_sets[id], byte, outside_scratch);
    if (outside_scratch.escaped) {
      const std::vector<uint32_t> rules = outside_scratch.escaped_rules;
      add_callers(rules, outside_scratch);
    }
    const uint32_t next = intern_outside(outside_scratch);
    outside_step.emplace(key, next);
    return next;
  };
  auto union_outside = [&](uint32_t a, uint32_t b) -> uint32_t {
    if (a == 0 || a == b) return b;
    if (b == 0) return a;
    const uint64_t key = uint64_t(std::min(a, b)) << 32 | std::max(a, b);
    auto it = outside_union.find(key);
    if (it != outside_union.end()) return it->second;
    StackSet set = outside_sets[a];
    const StackSet& other = outside_sets[b];
    set.tops.insert(set.tops.end(), other.tops.begin(), other.tops.end());
    set.can_end = set.can_end || other.can_end;
    set.overflowed = set.overflowed || other.overflowed;
    const uint32_t id = intern_outside(set);
    outside_union.emplace(key, id);
    return id;
  };
  std::vector<uint32_t> ext(max_depth, 0);  // per depth: the outside configuration's id

  stepper.start(state, bottom_of(grammar.states[state].rule_id), ctx[0]);
  if (ctx[0].escaped) ext[0] = callers_outside(ctx[0].escaped_rules);

  // Per state, the bytes that lead back to it (a loop such as free string content) and whether it takes every
  // well-formed multi-byte character back to itself, each computed when first needed and found by state: a walk
  // through a bounded string meets a new state at every depth. The loop bytes come from the byte classes.
  std::array<std::array<uint64_t, 4>, 256> class_bytes{};
  for (uint32_t b = 0; b < 256; ++b) class_bytes[grammar.byte_class[b]][b >> 6] |= uint64_t(1) << (b & 63);
  struct Loop {
    std::array<uint64_t, 4> bytes;
    int8_t every_character;  // -1: not computed yet
  };
  std::vector<Loop> loops;
  std::unordered_map<uint32_t, uint32_t> loop_of;  // state -> index in loops
  const uint32_t classes = grammar.num_byte_classes;
  uint32_t last_state = kNoState, last_index = 0;  // the state asked last: most nodes ask for the same one
  auto loops_on = [&](uint32_t s) -> Loop& {
    if (s == last_state) return loops[last_index];
    auto [it, fresh] = loop_of.try_emplace(s, uint32_t(loops.size()));
    last_state = s;
    last_index = it->second;
    if (!fresh) return loops[it->second];
    Loop l{{0, 0, 0, 0}, -1};
    const uint32_t* next = grammar.next_states_of(s);
    for (uint32_t c = 0; c < classes; ++c) {
      if (next[c] != s) continue;
      for (size_t w = 0; w < 4; ++w) l.bytes[w] |= class_bytes[c][w];
    }
    loops.push_back(l);
    return loops.back();
  };

  WalkResult result;
  std::vector<std::pair<uint32_t, uint32_t>>& accepted = result.accepted;  // ascending: the walk is in preorder
  size_t& num_accepted = result.num_accepted;
  auto accept = [&](uint32_t begin, uint32_t end) {
    if (begin >= end) return;
    num_accepted += end - begin;
    if (!accepted.empty() && accepted.back().second == begin) {
      accepted.back().second = end;
    } else {
      accepted.emplace_back(begin, end);
    }
  };
  // The configuration per depth in its compact form where it has one: a single stack inside the rule whose top
  // only consumes bytes, nothing outside. The walk steps a compact configuration through the byte table alone and
  // writes ctx/ext only when a step calls, returns or ends a rule (`sets` says whether ctx[d]/ext[d] hold it).
  struct Compact {
    uint32_t state, parent;
    bool valid, sets;
  };
  std::vector<Compact> compact(max_depth);
  auto only_consumes = [&](uint32_t s) {
    const GrammarState& st = grammar.states[s];
    return !st.accepting && !st.has_rule_edges();
  };
  auto compact_of = [&](size_t d) {
    const StackSet& c = ctx[d];
    const bool one = c.tops.size() == 1 && !c.escaped && !c.can_end && !c.overflowed && ext[d] == 0;
    compact[d] = {one ? c.tops[0].state : kNoState, one ? c.tops[0].parent : kNoState, one, true};
  };
  compact_of(0);

  for (uint32_t i = 0; i < trie.size();) {
    const TrieNode& node = trie[i];
    const size_t d = node.depth;
    if (min_token_bytes > 0 && vocab.subtree_max_bytes(i) < min_token_bytes) {
      i = node.subtree_end;
      continue;
    }
    bool stepped = false;
    if (compact[d - 1].valid) {
      const uint32_t next = grammar.next_state(compact[d - 1].state, node.byte);
      if (next == kNoState) {
        i = node.subtree_end;  // nothing inside the rule takes the byte, and nothing is outside
        continue;
      }
      if (only_consumes(next)) {
        compact[d] = {next, compact[d - 1].parent, true, false};
        ext[d] = 0;
        stepped = true;
      } else if (!compact[d - 1].sets) {
        ctx[d - 1].clear();
        ctx[d - 1].tops.push_back({compact[d - 1].state, compact[d - 1].parent});
        compact[d - 1].sets = true;
      }
    }
    if (!stepped) {
      stepper.step(ctx[d - 1], node.byte, ctx[d]);
      ext[d] = step_outside(ext[d - 1], node.byte);
      if (ctx[d].escaped) ext[d] = union_outside(ext[d], callers_outside(ctx[d].escaped_rules));
      compact_of(d);
    }
    const StackSet& outside_set = outside_sets[ext[d]];
    const bool inside = compact[d].valid || !ctx[d].tops.empty() || ctx[d].escaped || ctx[d].can_end;
    if (!compact[d].valid) {
      if (ctx[d].overflowed || outside_set.overflowed) {
        // Past the stepper's work bound: the matcher decides these tokens with the real stacks.
        for (uint32_t k = node.tokens_begin; k < vocab.subtree_tokens_begin(node.subtree_end); ++k) {
          if (vocab.sorted_bytes(int32_t(k)).size() >= min_token_bytes) result.uncertain.push_back(int32_t(k));
        }
        i = node.subtree_end;
        continue;
      }
      const bool outside = !outside_set.tops.empty() || outside_set.can_end;
      if (!inside && !outside) {
        i = node.subtree_end;
        continue;
      }
    }
    // A stack inside the rule whose state loops on every byte below this node keeps every token of the subtree
    // inside: the whole subtree is accepted, whatever the other stacks do. The first child's byte, when ASCII, must
    // lead back to the state: a cheap test that spares most nodes of a state without such a loop (a bounded
    // string's) the lookup.
    auto loops_below = [&](uint32_t top) {
      const uint8_t first_below = trie[i + 1].byte;
      if (first_below < 0x80 && grammar.next_state(top, first_below) != top) return false;
      const std::array<uint64_t, 4>& below = vocab.subtree_bytes(i);
      Loop& loop = loops_on(top);
      const bool ascii_loops = (below[0] & ~loop.bytes[0]) == 0 && (below[1] & ~loop.bytes[1]) == 0;
      if (!ascii_loops) return false;
      if ((below[2] & ~loop.bytes[2]) == 0 && (below[3] & ~loop.bytes[3]) == 0) return true;
      if (!vocab.utf8_below(i)) return false;
      if (loop.every_character < 0) loop.every_character = takes_every_character(grammar, top) ? 1 : 0;
      return loop.every_character == 1;
    };
    if (node.subtree_end > i + 1) {
      bool whole = false;
      if (compact[d].valid) {
        whole = loops_below(compact[d].state);
      } else {
        for (const StackTop& t : ctx[d].tops) {
          if (loops_below(t.state)) {
            whole = true;
            break;
          }
        }
      }
      if (whole) {
        accept(node.tokens_begin, vocab.subtree_tokens_begin(node.subtree_end));
        i = node.subtree_end;
        continue;
      }
    }
    if (d < min_token_bytes) {
      // this node's own tokens are left to the caller
    } else if (inside) {
      accept(node.tokens_begin, node.tokens_begin + node.num_tokens_here);
    } else {
      for (uint32_t k = 0; k < node.num_tokens_here; ++k) result.uncertain.push_back(int32_t(node.tokens_begin + k));
    }
    if (!compact[d].valid && ctx[d].tops.empty() && outside_set.tops.empty()) {
      i = node.subtree_end;  // nothing can take another byte
      continue;
    }
    ++i;
  }
  return result;
}

}  // namespace

bool takes_string_slice(const Grammar& grammar, const TokenVocabulary& vocab, uint32_t state) {
  if (vocab.outside_string_slice() == nullptr || !grammar.states[state].has_byte_edges()) return false;
  for (uint32_t b = 0; b < 0x80; ++b) {
    if (TokenVocabulary::in_string_slice(uint8_t(b)) && grammar.next_state(state, uint8_t(b)) != state) return false;
  }
  return takes_every_character(grammar, state);
}

StateTokenMask build_state_token_mask(const Grammar& grammar, const ReturnSites& returns, const TokenVocabulary& vocab,
                                      uint32_t state) {
  const TokenVocabulary* outside = outside_slice_of(grammar, vocab, state);
  if (outside != nullptr) {
    // The slice is accepted whole; the walk classifies the other tokens, in the outside vocabulary's order.
    WalkResult walked = walk_state(grammar, returns, *outside, state, 0);
    StateTokenMask out;
    out.accepted_bits = vocab.string_slice_bits();
    for (const auto& [begin, end] : walked.accepted) {
      for (uint32_t k = begin; k < end; ++k) {
        const TokenId id = outside->sorted_id(int32_t(k));
        out.accepted_bits[size_t(id) >> 5] |= 1u << (id & 31);
      }
    }
    out.uncertain = std::move(walked.uncertain);
    for (int32_t& k : out.uncertain) k = vocab.sorted_index_outside_slice(k);
    out.uncertain.shrink_to_fit();
    return out;
  }
  WalkResult walked = walk_state(grammar, returns, vocab, state, 0);
  const std::vector<std::pair<uint32_t, uint32_t>>& accepted = walked.accepted;
  const size_t num_accepted = walked.num_accepted;
  StateTokenMask out;
  out.uncertain = std::move(walked.uncertain);
  const size_t num_sorted = size_t(vocab.num_sorted());
  if (num_accepted * 32 > size_t(vocab.vocab_size())) {
    std::vector<uint32_t>& bits = out.accepted_bits;
    if (num_accepted * 2 > num_sorted) {
      // Most text tokens: every text token, less those between the ranges.
      bits = vocab.text_token_bits();
      uint32_t next = 0;
      auto drop = [&](uint32_t begin, uint32_t end) {
        for (uint32_t k = begin; k < end; ++k) {
          const TokenId id = vocab.sorted_id(int32_t(k));
          bits[size_t(id) >> 5] &= ~(1u << (id & 31));
        }
      };
      for (const auto& [begin, end] : accepted) {
        drop(next, begin);
        next = end;
      }
      drop(next, uint32_t(num_sorted));
    } else {
      bits.assign(vocab.mask_words(), 0);
      for (const auto& [begin, end] : accepted) {
        for (uint32_t k = begin; k < end; ++k) {
          const TokenId id = vocab.sorted_id(int32_t(k));
          bits[size_t(id) >> 5] |= 1u << (id & 31);
        }
      }
    }
  } else {
    out.accepted_ids.reserve(num_accepted);
    for (const auto& [begin, end] : accepted) {
      for (uint32_t k = begin; k < end; ++k) out.accepted_ids.push_back(vocab.sorted_id(int32_t(k)));
    }
  }
  out.uncertain.shrink_to_fit();
  return out;
}

StateTokenMask build_state_token_mask_above(const Grammar& grammar, const ReturnSites& returns,
                                            const TokenVocabulary& vocab, uint32_t state,
                                            const StateTokenMask& same_below, uint32_t below_bytes) {
  const TokenVocabulary* outside = outside_slice_of(grammar, vocab, state);
  const TokenVocabulary& walked_vocab = outside != nullptr ? *outside : vocab;
  WalkResult walked = walk_state(grammar, returns, walked_vocab, state, below_bytes);
  if (outside != nullptr) {
    for (int32_t& k : walked.uncertain) k = vocab.sorted_index_outside_slice(k);
  }
  std::vector<uint32_t> bits;
  if (!same_below.accepted_bits.empty()) {
    bits = same_below.accepted_bits;
  } else {
    bits.assign(vocab.mask_words(), 0);
    for (const TokenId id : same_below.accepted_ids) bits[size_t(id) >> 5] |= 1u << (id & 31);
  }
  for (const TokenId id : vocab.tokens_of_at_least(below_bytes)) bits[size_t(id) >> 5] &= ~(1u << (id & 31));
  for (const auto& [begin, end] : walked.accepted) {
    for (uint32_t k = begin; k < end; ++k) {
      const TokenId id = walked_vocab.sorted_id(int32_t(k));
      bits[size_t(id) >> 5] |= 1u << (id & 31);
    }
  }
  if (outside != nullptr) {
    const std::vector<uint32_t>& slice = vocab.string_slice_bits();
    for (size_t w = 0; w < bits.size(); ++w) bits[w] |= slice[w];
  }
  size_t num_accepted = 0;
  for (const uint32_t w : bits) num_accepted += size_t(std::popcount(w));
  StateTokenMask out;
  if (num_accepted * 32 > size_t(vocab.vocab_size())) {
    out.accepted_bits = std::move(bits);
  } else {
    out.accepted_ids.reserve(num_accepted);
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint32_t word = bits[w]; word != 0; word &= word - 1)
        out.accepted_ids.push_back(TokenId(w * 32 + size_t(std::countr_zero(word))));
    }
  }
  std::vector<int32_t> shorter;
  for (const int32_t k : same_below.uncertain) {
    if (vocab.sorted_bytes(k).size() < below_bytes) shorter.push_back(k);
  }
  out.uncertain.resize(shorter.size() + walked.uncertain.size());
  std::merge(shorter.begin(), shorter.end(), walked.uncertain.begin(), walked.uncertain.end(), out.uncertain.begin());
  return out;
}

}  // namespace pagoda::grammar
