// StateTokenMask: what one grammar state decides about every token without knowing the stack below it
// (XGrammar's adaptive token mask cache). Walking the vocabulary trie from the state alone, a token is
//   accepted  - its bytes are consumed inside the state's rule (or end exactly as the rule ends): allowed
//               whatever the callers;
//   rejected  - it fails inside the rule, or runs past the rule's end into bytes no caller could take: never
//               allowed;
//   uncertain - it runs past the rule's end into bytes some caller may take: the matcher checks these against
//               the real stack.
// Where the state's rule may end, the walk goes on in every state a caller of the rule returns to, and so on
// outwards (XGrammar's context expansion, to any depth): a token that runs past the rule's end into bytes no
// possible caller takes is rejected here, and only tokens some caller takes stay uncertain. States of a root rule
// that nothing calls sit on the stack's bottom: their masks are exact (nothing uncertain).
// Built once per (compiled grammar, state) by build_state_token_mask; immutable afterwards.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/types.h"
#include "grammar/grammar.h"
#include "grammar/token_vocabulary.h"

namespace pagoda::grammar {

struct StateTokenMask {
  // Accepted tokens: a bitset over token ids ([mask_words], 1 = accepted) when they are many, else a list.
  std::vector<uint32_t> accepted_bits;
  std::vector<TokenId> accepted_ids;
  std::vector<int32_t> uncertain;  // sorted indices (TokenVocabulary order), ascending
  size_t memory_bytes() const {
    return sizeof(*this) + accepted_bits.capacity() * 4 + accepted_ids.capacity() * 4 + uncertain.capacity() * 4;
  }
};

// Where each rule's callers continue after it: the targets of the rule edges that call it. A return state in
// the root rule sits on the bottom of the stack when nothing calls the root (then its stack is known exactly).
struct ReturnSites {
  std::vector<std::vector<uint32_t>> by_rule;  // [rules] return states
  bool root_is_called = false;
  static ReturnSites of(const Grammar& grammar);
};

// Whether `state` takes every token of the vocabulary's string slice (token_vocabulary.h) back to itself: each
// ASCII byte of the slice and every well-formed multi-byte character lead back to `state` (free string content,
// not a bounded string's counting states). Its mask is then the slice plus a walk of the other tokens alone.
bool takes_string_slice(const Grammar& grammar, const TokenVocabulary& vocab, uint32_t state);

StateTokenMask build_state_token_mask(const Grammar& grammar, const ReturnSites& returns, const TokenVocabulary& vocab,
                                      uint32_t state);
// The same mask, given the mask of a state that classifies every token shorter than `below_bytes` bytes as `state`
// does (state_equivalence.h): those tokens are taken from `same_below`, and only the longer ones are walked.
StateTokenMask build_state_token_mask_above(const Grammar& grammar, const ReturnSites& returns,
                                            const TokenVocabulary& vocab, uint32_t state,
                                            const StateTokenMask& same_below, uint32_t below_bytes);

}  // namespace pagoda::grammar
