// build_state_token_mask (state_token_mask.h): one preorder walk of the vocabulary trie from a single state above
// an unknown caller, keeping a configuration per trie depth.
#include "grammar/state_token_mask.h"

#include "grammar/stack_set.h"

namespace pagoda::grammar {

StateTokenMask build_state_token_mask(const Grammar& grammar, const TokenVocabulary& vocab, uint32_t state) {
  const std::vector<TrieNode>& trie = vocab.trie();
  const std::bitset<256>& follow = grammar.rules[grammar.states[state].rule_id].follow;
  StackPool pool;
  StackStepper stepper(grammar, pool);
  const size_t max_depth = size_t(vocab.max_token_bytes()) + 1;
  std::vector<StackSet> level(max_depth);
  // Per depth: the walk so far has a path that escaped the rule and continues into bytes a caller may take.
  std::vector<uint8_t> uncertain(max_depth, 0);
  stepper.start(state, kUnknownBottom, level[0]);

  std::vector<int32_t> accepted_sorted;
  StateTokenMask out;
  for (uint32_t i = 0; i < trie.size();) {
    const TrieNode& node = trie[i];
    const StackSet& in = level[node.depth - 1];
    StackSet& here = level[node.depth];
    stepper.step(in, node.byte, here);
    const bool unsure = uncertain[node.depth - 1] || (in.escaped && follow.test(node.byte));
    if (here.tops.empty() && !here.escaped) {
      if (unsure) {
        for (uint32_t k = node.tokens_begin; k < vocab.subtree_tokens_begin(node.subtree_end); ++k) {
          out.uncertain.push_back(int32_t(k));
        }
      }
      i = node.subtree_end;
      continue;
    }
    uncertain[node.depth] = unsure;
    for (uint32_t k = 0; k < node.num_tokens_here; ++k) accepted_sorted.push_back(int32_t(node.tokens_begin + k));
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
