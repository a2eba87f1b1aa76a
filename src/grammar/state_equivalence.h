// State equivalence up to a depth: how many bytes two states of one rule read alike, so that a state's token mask
// can be taken from another's for every token shorter than that (the states of a bounded string, `maxLength` n,
// differ only in how many characters remain: each is a copy of the next one for the tokens that fit). Pure
// functions over an immutable Grammar; the token masks themselves are state_token_mask.h's.
#pragma once

#include <cstdint>

#include "grammar/grammar.h"

namespace pagoda::grammar {

// A key that equal states share (rule, accepting, which byte classes lead on, the rules called): states of
// different keys differ at once, so only states of one key are worth comparing.
uint64_t state_local_key(const Grammar& grammar, uint32_t state);

// The largest d <= limit such that every byte string shorter than d bytes leads `p` and `q` (each above the same
// unknown caller) to the same outcome: still inside the rule, ended (returned to the caller) at the same points,
// or dead. Then a token shorter than d bytes is accepted, rejected or uncertain alike from both. Compared by a
// walk over pairs of states (a call pairs the two return states at the same depth, which only makes d smaller
// than the truth: a conservative answer); 0 for states of different rules. At most `max_pairs` pairs are compared:
// past that, the depth reached so far. The default is small because a mask build compares up to four candidates
// before its walk, and a compare that runs long (states of a key automaton pair off by the thousand) costs more
// than the few extra trie nodes its shallower depth leaves to the walk.
uint32_t same_behaviour_depth(const Grammar& grammar, uint32_t p, uint32_t q, uint32_t limit,
                              uint32_t max_pairs = 1u << 10);

}  // namespace pagoda::grammar
