// build_state_token_mask (state_token_mask.h): one preorder walk of the vocabulary trie from a single state above
// an unknown caller, keeping two configurations per trie depth: the stacks still inside the state's rule (ctx),
// and those that left it and go on in some caller (ext). A subtree is accepted whole, unwalked, where a stack
// inside the rule stays in a state that takes every byte below it back to itself, or every ASCII byte below and
// every well-formed character where the subtree is well-formed UTF-8 (free string content in a byte-level BPE
// vocabulary); its tokens are kept as ranges of the sorted order until the mask is written.
// build_state_token_mask_above walks only the subtrees that hold tokens of some length or more, and takes the
// shorter tokens' classes from another state's mask.
#include "grammar/state_token_mask.h"

#include <algorithm>
#include <array>
#include <bit>
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
  std::vector<StackSet> ctx(max_depth), ext(max_depth);
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
  stepper.start(state, bottom_of(grammar.states[state].rule_id), ctx[0]);
  if (ctx[0].escaped) add_callers(ctx[0].escaped_rules, ext[0]);

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
  auto loops_on = [&](uint32_t s) -> Loop& {
    auto [it, fresh] = loop_of.try_emplace(s, uint32_t(loops.size()));
    if (!fresh) return loops[it->second];
    Loop l{{0, 0, 0, 0}, -1};
    const uint32_t* next = grammar.next_states.data() + size_t(s) * classes;
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
  std::vector<uint32_t> escaped;
  for (uint32_t i = 0; i < trie.size();) {
    const TrieNode& node = trie[i];
    const size_t d = node.depth;
    if (vocab.subtree_max_bytes(i) < min_token_bytes) {
      i = node.subtree_end;
      continue;
    }
    stepper.step(ctx[d - 1], node.byte, ctx[d]);
    stepper.step(ext[d - 1], node.byte, ext[d]);
    if (ext[d].escaped) {
      escaped.assign(ext[d].escaped_rules.begin(), ext[d].escaped_rules.end());
      add_callers(escaped, ext[d]);
    }
    if (ctx[d].escaped) add_callers(ctx[d].escaped_rules, ext[d]);
    if (ctx[d].overflowed || ext[d].overflowed) {
      // Past the stepper's work bound: the matcher decides these tokens with the real stacks.
      for (uint32_t k = node.tokens_begin; k < vocab.subtree_tokens_begin(node.subtree_end); ++k) {
        if (vocab.sorted_bytes(int32_t(k)).size() >= min_token_bytes) result.uncertain.push_back(int32_t(k));
      }
      i = node.subtree_end;
      continue;
    }
    const bool inside = !ctx[d].tops.empty() || ctx[d].escaped || ctx[d].can_end;
    const bool outside = !ext[d].tops.empty() || ext[d].can_end;
    if (!inside && !outside) {
      i = node.subtree_end;
      continue;
    }
    // A stack inside the rule whose state loops on every byte below this node accepts the whole subtree.
    // The first child's byte, when ASCII, must lead back to the state: a cheap test that spares most nodes of a
    // state without such a loop (a bounded string's) the lookup.
    const uint8_t first_below = node.subtree_end > i + 1 ? trie[i + 1].byte : 0;
    if (ctx[d].tops.size() == 1 && node.subtree_end > i + 1 &&
        (first_below >= 0x80 || grammar.next_state(ctx[d].tops[0].state, first_below) == ctx[d].tops[0].state)) {
      const std::array<uint64_t, 4>& below = vocab.subtree_bytes(i);
      const uint32_t top = ctx[d].tops[0].state;
      Loop& loop = loops_on(top);
      const bool ascii_loops = (below[0] & ~loop.bytes[0]) == 0 && (below[1] & ~loop.bytes[1]) == 0;
      bool rest_loops = (below[2] & ~loop.bytes[2]) == 0 && (below[3] & ~loop.bytes[3]) == 0;
      if (ascii_loops && !rest_loops && vocab.utf8_below(i)) {
        if (loop.every_character < 0) loop.every_character = takes_every_character(grammar, top) ? 1 : 0;
        rest_loops = loop.every_character == 1;
      }
      if (ascii_loops && rest_loops) {
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
    if (ctx[d].tops.empty() && ext[d].tops.empty()) {
      i = node.subtree_end;  // nothing can take another byte
      continue;
    }
    ++i;
  }
  return result;
}

}  // namespace

StateTokenMask build_state_token_mask(const Grammar& grammar, const ReturnSites& returns, const TokenVocabulary& vocab,
                                      uint32_t state) {
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
  const WalkResult walked = walk_state(grammar, returns, vocab, state, below_bytes);
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
      const TokenId id = vocab.sorted_id(int32_t(k));
      bits[size_t(id) >> 5] |= 1u << (id & 31);
    }
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
