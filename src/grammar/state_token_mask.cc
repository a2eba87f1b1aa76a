// build_state_token_mask (state_token_mask.h): one preorder walk of the vocabulary trie from a single state above
// an unknown caller, keeping two configurations per trie depth: the stacks still inside the state's rule (ctx),
// and those that left it and go on in some caller (ext).
#include "grammar/state_token_mask.h"

#include <algorithm>
#include <array>

#include "grammar/stack_set.h"

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

StateTokenMask build_state_token_mask(const Grammar& grammar, const ReturnSites& returns, const TokenVocabulary& vocab,
                                      uint32_t state) {
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
        work.insert(work.end(), scratch.escaped_rules.begin(), scratch.escaped_rules.end());
      }
    }
  };
  stepper.start(state, bottom_of(grammar.states[state].rule_id), ctx[0]);
  if (ctx[0].escaped) add_callers(ctx[0].escaped_rules, ext[0]);

  // Per state, the bytes that lead back to it (a loop such as free string content), computed when first needed.
  std::vector<std::array<uint64_t, 4>> loop_bytes;
  std::vector<uint32_t> loop_state;
  auto loops_on = [&](uint32_t s) -> const std::array<uint64_t, 4>& {
    for (size_t k = 0; k < loop_state.size(); ++k) {
      if (loop_state[k] == s) return loop_bytes[k];
    }
    std::array<uint64_t, 4> bytes{0, 0, 0, 0};
    for (uint32_t b = 0; b < 256; ++b) {
      if (grammar.next_state(s, uint8_t(b)) == s) bytes[b >> 6] |= uint64_t(1) << (b & 63);
    }
    loop_state.push_back(s);
    loop_bytes.push_back(bytes);
    return loop_bytes.back();
  };

  std::vector<int32_t> accepted_sorted;
  StateTokenMask out;
  for (uint32_t i = 0; i < trie.size();) {
    const TrieNode& node = trie[i];
    const size_t d = node.depth;
    stepper.step(ctx[d - 1], node.byte, ctx[d]);
    stepper.step(ext[d - 1], node.byte, ext[d]);
    if (ext[d].escaped) {
      const std::vector<uint32_t> escaped = ext[d].escaped_rules;
      add_callers(escaped, ext[d]);
    }
    if (ctx[d].escaped) add_callers(ctx[d].escaped_rules, ext[d]);
    const bool inside = !ctx[d].tops.empty() || ctx[d].escaped || ctx[d].can_end;
    const bool outside = !ext[d].tops.empty() || ext[d].can_end;
    if (!inside && !outside) {
      i = node.subtree_end;
      continue;
    }
    // A stack inside the rule whose state loops on every byte below this node accepts the whole subtree.
    if (ctx[d].tops.size() == 1 && node.subtree_end > i + 1) {
      const std::array<uint64_t, 4>& below = vocab.subtree_bytes(i);
      const std::array<uint64_t, 4>& loop = loops_on(ctx[d].tops[0].state);
      if ((below[0] & ~loop[0]) == 0 && (below[1] & ~loop[1]) == 0 && (below[2] & ~loop[2]) == 0 &&
          (below[3] & ~loop[3]) == 0) {
        for (uint32_t k = node.tokens_begin; k < vocab.subtree_tokens_begin(node.subtree_end); ++k) {
          accepted_sorted.push_back(int32_t(k));
        }
        i = node.subtree_end;
        continue;
      }
    }
    for (uint32_t k = 0; k < node.num_tokens_here; ++k) {
      (inside ? accepted_sorted : out.uncertain).push_back(int32_t(node.tokens_begin + k));
    }
    if (ctx[d].tops.empty() && ext[d].tops.empty()) {
      i = node.subtree_end;  // nothing can take another byte
      continue;
    }
    ++i;
  }

  const size_t words = vocab.mask_words();
  if (accepted_sorted.size() * 32 > size_t(vocab.vocab_size())) {
    out.accepted_bits.assign(words, 0);
    for (const int32_t k : accepted_sorted) {
      const TokenId id = vocab.sorted_id(k);
      out.accepted_bits[size_t(id) >> 5] |= 1u << (id & 31);
    }
  } else {
    out.accepted_ids.reserve(accepted_sorted.size());
    for (const int32_t k : accepted_sorted) out.accepted_ids.push_back(vocab.sorted_id(k));
  }
  out.uncertain.shrink_to_fit();
  return out;
}

}  // namespace pagoda::grammar
