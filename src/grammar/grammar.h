// Grammar: a context-free grammar over bytes in its compiled, immutable form: one deterministic automaton per
// rule whose edges either consume a byte range or call another rule (a pushdown automaton once the calls are
// stacked). Built only by GrammarBuilder::build, which also fills the analyses below; shared read-only by every
// matcher of every sequence (thread-safe: its only mutable part, the transition table's rows, fills each row once
// under a per-row flag, transition_table.h).
//
// Invariants (established by build): every state can reach an accepting state of its rule (dead states and
// edges into them are removed), every rule matches at least one string, no rule is left-recursive, and the
// byte edges of a state are disjoint and sorted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/transition_table.h"

namespace pagoda::grammar {

inline constexpr uint32_t kNoState = 0xFFFFFFFF;

struct ByteEdge {
  uint8_t lo;  // bytes [lo, hi] lead to target
  uint8_t hi;
  uint32_t target;  // a state of the same rule
};

struct RuleEdge {
  uint32_t rule_id;  // match one string of this rule...
  uint32_t target;   // ...then continue here (a state of the calling rule)
};

struct GrammarState {
  uint32_t rule_id = 0;
  uint32_t byte_edges_begin = 0, byte_edges_end = 0;  // into Grammar::byte_edges
  uint32_t rule_edges_begin = 0, rule_edges_end = 0;  // into Grammar::rule_edges
  bool accepting = false;                             // the rule may end here
  bool nullable = false;   // an accepting state is reachable without consuming a byte (through nullable calls)
  uint32_t min_bytes = 0;  // the fewest bytes that take this state to the end of its rule
  bool has_byte_edges() const { return byte_edges_end > byte_edges_begin; }
  bool has_rule_edges() const { return rule_edges_end > rule_edges_begin; }
};

struct GrammarRule {
  std::string name;
  uint32_t start_state = kNoState;
};

struct Grammar {
  std::vector<GrammarRule> rules;
  std::vector<GrammarState> states;
  std::vector<ByteEdge> byte_edges;
  std::vector<RuleEdge> rule_edges;
  uint32_t root_rule = 0;

  // Byte classes: bytes no edge of the grammar tells apart share a class; next_states_of(state)[byte_class[b]] is
  // the target of byte b from state, or kNoState. A state's row is filled from its byte edges when first asked
  // for; after that the stepping hot path is a flag test and two loads.
  std::vector<uint8_t> byte_class;  // [256]
  uint32_t num_byte_classes = 0;
  TransitionTable transitions;  // [states.size()] rows of num_byte_classes

  const uint32_t* next_states_of(uint32_t state) const { return transitions.row(*this, state); }
  uint32_t next_state(uint32_t state, uint8_t byte) const { return next_states_of(state)[byte_class[byte]]; }
  std::span<const ByteEdge> byte_edges_of(uint32_t state) const {
    const GrammarState& s = states[state];
    return {byte_edges.data() + s.byte_edges_begin, s.byte_edges_end - s.byte_edges_begin};
  }
  std::span<const RuleEdge> rule_edges_of(uint32_t state) const {
    const GrammarState& s = states[state];
    return {rule_edges.data() + s.rule_edges_begin, s.rule_edges_end - s.rule_edges_begin};
  }
  // A readable dump, one rule per line in a GBNF-like notation of its automaton, for debugging and error reports.
  std::string to_string() const;
};

}  // namespace pagoda::grammar
