// GrammarMatcher: the grammar state of one sequence. Accepts tokens (refusing any that would violate the
// grammar), fills the mask of tokens allowed next, tells when the grammar can or must end, rolls back the last
// tokens (speculative decoding) and copies cheaply (n > 1 forks). Owns its configuration history and its stack
// frames; shares the CompiledGrammar. One matcher per sequence, used by one thread at a time.
//
// Mask: bit `id` of word id / 32 is 1 when token `id` may come next. Text tokens are allowed when the grammar
// accepts their bytes; stop tokens (EOS, end of turn) exactly when the text so far is a complete sentence; other
// tokens (control tokens) never. In a grammar so ambiguous that one move passes the stepper's work bound
// (kMaxExpansionWork, stack_set.h), the matcher is overflowed(): an error, not a narrower grammar. From then on it
// accepts nothing and its mask allows nothing (the engine ends the sequence as a grammar dead end).
#pragma once

#include <bitset>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "grammar/compiled_grammar.h"
#include "grammar/stack_set.h"

namespace pagoda::grammar {

class GrammarMatcher {
 public:
  // Keeps the configurations of the last `max_rollback_tokens` tokens for rollback.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, int32_t max_rollback_tokens = 32);
  GrammarMatcher(const GrammarMatcher& other);
  GrammarMatcher& operator=(const GrammarMatcher& other);
  GrammarMatcher(GrammarMatcher&& other) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&& other) noexcept;

  // Advances by one token; false (and no change) when the token is not allowed here.
  bool accept_token(TokenId token);
  // Advances by raw bytes (text forced into the output, tests); counts as one token for rollback.
  bool accept_bytes(std::string_view bytes);
  // `mask`: [vocabulary().mask_words()] words, overwritten.
  void fill_mask(std::span<uint32_t> mask);
  // Whether `token` is allowed next (the same answer fill_mask gives, for one token).
  bool is_token_allowed(TokenId token) const;

  // The output so far is a complete sentence of the grammar (a stop token is allowed).
  bool can_end() const { return history_.back().stopped || history_.back().set.can_end; }
  // Nothing but a stop token can follow (the grammar is finished), or a stop token was accepted: the engine
  // ends the sequence.
  bool is_complete() const {
    const Entry& e = history_.back();
    return e.stopped || (e.set.can_end && e.set.tops.empty());
  }
  bool is_stopped() const { return history_.back().stopped; }
  // A move passed the stepper's work bound: the grammar is too ambiguous to follow (see above).
  bool overflowed() const { return overflowed_; }
  // Undoes the last `num_tokens` accepted tokens; false (and no change) when fewer are kept.
  bool rollback(int32_t num_tokens);
  int32_t num_rollback_tokens() const { return int32_t(history_.size()) - 1; }

  // Bytes that may come next (tools and tests: the byte-level view of the mask).
  std::bitset<256> allowed_next_bytes() const;
  // The fewest bytes that complete the sentence from here (0 when can_end()).
  uint64_t min_bytes_to_complete() const;
  const CompiledGrammar& compiled_grammar() const { return *grammar_; }
  size_t num_stacks() const { return history_.back().set.tops.size(); }

 private:
  struct Entry {
    StackSet set;
    bool stopped = false;
  };
  bool advance(const StackSet& from, std::string_view bytes, StackSet& out) const;
  void check_uncertain(const StackSet& set, std::span<uint32_t> mask);
  void push(Entry entry);
  void collect_garbage();

  std::shared_ptr<const CompiledGrammar> grammar_;
  int32_t max_rollback_tokens_;
  // The pool and stepper are mutable: stepping interns frames, which changes no observable state.
  mutable StackPool pool_;
  mutable StackStepper stepper_;
  std::deque<Entry> history_;  // back(): the current configuration
  uint32_t gc_threshold_ = 4096;
  mutable bool overflowed_ = false;
  // Scratch for fill_mask.
  std::vector<uint32_t> top_states_;
  std::vector<int32_t> uncertain_;
  mutable std::vector<StackSet> levels_;
};

}  // namespace pagoda::grammar
