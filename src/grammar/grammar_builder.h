// GrammarBuilder: the front ends' way to write a grammar. Expressions (literals, byte sets, code point classes,
// sequences, choices, bounded or unbounded repetition, calls of named rules) are built bottom-up and assigned to
// rules; build() lowers each rule body to an automaton (Thompson NFA, then subset construction: alternatives
// sharing a prefix share states, repetition becomes loops inside the rule rather than helper rules, and an item
// repeated many times is copied as its DFA), removes what can never match, refuses left recursion, and computes
// the analyses Grammar carries (nullability, shortest completions, byte classes).
//
// Expressions are values owned by the builder (an Expr is an index); reusing one Expr in several places copies its
// automaton each time, except that build() turns a big piece that calls rules and is used in many places into a
// rule of its own ("shared-N"), called from each use. Every size is bounded by BuildLimits: an untrusted grammar
// fails with an error naming the limit instead of exhausting memory.
#pragma once

#include <pagoda/status.h>

#include <bitset>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/code_point_set.h"
#include "grammar/grammar.h"

namespace pagoda::grammar {

inline constexpr uint32_t kUnbounded = 0xFFFFFFFF;

struct BuildLimits {
  uint32_t max_nfa_states = 1u << 20;      // over all rules, before determinization
  uint32_t max_dfa_states = 1u << 17;      // over all rules
  uint64_t max_table_bytes = 64ull << 20;  // the byte-class transition table
  // Steps of lowering and determinization (NFA states and edges made, closure steps, subset entries stored and
  // compared), checked as they are spent: bounds a compile's time and memory whatever the grammar's shape (nested
  // counted repeats make few states but huge subsets). A count, not a clock, so the same grammar always compiles
  // or always fails.
  uint64_t max_work = 1ull << 25;
  // Polled as the compile goes (every few milliseconds of work): once it returns true the compile stops with
  // kCancelled. The server's hook says: the request's deadline passed, its client left, or shutdown began.
  std::function<bool()> should_stop;
};

// What one compile has spent against BuildLimits' max_work and should_stop. One compile, one thread.
class CompileBudget {
 public:
  explicit CompileBudget(const BuildLimits& limits) : limits_(limits) {}
  // Adds `units` of work; false once the work limit is passed or the stop hook said stop (status() says which).
  bool charge(uint64_t units) {
    spent_ += units;
    if (spent_ >= next_poll_) poll();
    return status_.ok();
  }
  bool ok() const { return status_.ok(); }
  // kInvalidArgument naming the work limit, or kCancelled.
  const Status& status() const { return status_; }
  uint64_t spent() const { return spent_; }

 private:
  void poll();

  const BuildLimits& limits_;
  uint64_t spent_ = 0;
  uint64_t next_poll_ = 0;
  Status status_;
};

class GrammarBuilder {
 public:
  using Expr = int32_t;

  // Rules. A rule is declared (so it can be called before its body exists, for recursion) and defined once.
  int32_t add_rule(std::string name);
  std::optional<int32_t> find_rule(std::string_view name) const;
  void set_body(int32_t rule_id, Expr body);
  bool has_body(int32_t rule_id) const { return rules_[size_t(rule_id)].body >= 0; }
  const std::string& rule_name(int32_t rule_id) const { return rules_[size_t(rule_id)].name; }
  int32_t num_rules() const { return int32_t(rules_.size()); }
  // A fresh rule name "base", "base-1", "base-2"... not used yet.
  std::string unique_rule_name(std::string_view base);

  // Expressions.
  Expr empty();                                  // the empty string
  Expr nothing();                                // no string at all
  Expr literal(std::string_view bytes);          // exactly these bytes
  Expr byte_range(uint8_t lo, uint8_t hi);       // one byte in [lo, hi]
  Expr byte_set(const std::bitset<256>& bytes);  // one byte of the set
  Expr code_points(const CodePointSet& set);     // one code point of the set, UTF-8 encoded
  Expr sequence(std::vector<Expr> items);
  Expr choice(std::vector<Expr> alternatives);
  Expr repeat(Expr item, uint32_t min, uint32_t max);  // max: kUnbounded for no upper bound
  Expr optional(Expr item) { return repeat(item, 0, 1); }
  Expr star(Expr item) { return repeat(item, 0, kUnbounded); }
  Expr plus(Expr item) { return repeat(item, 1, kUnbounded); }
  Expr rule_ref(int32_t rule_id);
  // The strings every item matches (items must be regular: no rule calls inside them). Lowered as the product of
  // the items' DFAs, e.g. a JSON Schema string's `pattern` together with its `format` and lengths.
  Expr intersection(std::vector<Expr> items);
  // The strings `item` matches and `removed` does not (both regular), e.g. property names no pattern matches.
  Expr difference(Expr item, Expr removed);

  // Lowers every rule reachable from `root_rule_id` (each must have a body). Errors: a called rule without a body,
  // left recursion (naming the cycle), a grammar that matches no string, a limit exceeded (kInvalidArgument),
  // limits.should_stop said stop (kCancelled).
  Result<Grammar> build(int32_t root_rule_id, const BuildLimits& limits = {}) const;

 private:
  enum class Kind : uint8_t {
    kEmpty,
    kNothing,
    kBytes,
    kByteSet,
    kCodePoints,
    kSequence,
    kChoice,
    kRepeat,
    kRule,
    kIntersection,
    kDifference
  };
  struct Node {
    Kind kind = Kind::kEmpty;
    std::string bytes;           // kBytes
    std::bitset<256> byte_set;   // kByteSet
    CodePointSet code_points;    // kCodePoints
    std::vector<Expr> children;  // kSequence, kChoice, kRepeat (one), kIntersection, kDifference (two)
    uint32_t min = 0, max = 0;   // kRepeat
    int32_t rule_id = -1;        // kRule
  };
  struct RuleDef {
    std::string name;
    Expr body = -1;
  };
  Expr add(Node node);

  std::vector<Node> nodes_;
  std::vector<RuleDef> rules_;
  std::unordered_map<std::string, int32_t> rule_ids_;
  std::unordered_map<std::string, uint32_t> name_counters_;  // unique_rule_name's last suffix per base
  friend class NfaLowering;
};

}  // namespace pagoda::grammar
