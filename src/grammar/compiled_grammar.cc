// CompiledGrammar (compiled_grammar.h): the lazily built per-state token masks, each taken whole or in part from
// an equivalent state's where one was built before.
#include "grammar/compiled_grammar.h"

#include "grammar/state_equivalence.h"

namespace pagoda::grammar {

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), returns_(ReturnSites::of(grammar_)), vocab_(std::move(vocab)) {
  once_ = std::make_unique<std::once_flag[]>(grammar_.states.size());
  masks_.resize(grammar_.states.size());
}

namespace {
// The built states of one key a new state is compared with (the latest ones), the fewest bytes two states must
// read alike for the shorter tokens to be taken from the other's mask rather than walked, and the bytes read alike
// that end the comparisons short of every token (see build_mask).
constexpr size_t kCandidates = 4;
constexpr uint32_t kMinSameBytes = 3;
constexpr uint32_t kEnoughSameBytes = 32;
}  // namespace

std::shared_ptr<const StateTokenMask> CompiledGrammar::build_mask(uint32_t state) const {
  const uint32_t every_token = uint32_t(vocab_->max_token_bytes()) + 1;
  const uint64_t key = state_local_key(grammar_, state);
  std::vector<uint32_t> candidates;
  {
    std::lock_guard<std::mutex> lock(built_mu_);
    auto it = built_by_key_.find(key);
    if (it != built_by_key_.end()) candidates = it->second;
  }
  // The latest candidate first; one that reads alike for kEnoughSameBytes or more ends the search: a compare that
  // gets that deep but stops short of every token has mostly run out of its pairs (a state whose automaton branches
  // widely, as a counted string's does), and the older candidates, of the same key, run out alike at the same cost
  // each. A shallower one may be a state of another part of the rule: the older ones are compared too.
  uint32_t best = kNoState, best_depth = 0;
  for (size_t i = candidates.size(); i-- > 0 && best_depth < kEnoughSameBytes && best_depth < every_token;) {
    const uint32_t depth = same_behaviour_depth(grammar_, state, candidates[i], every_token);
    if (depth > best_depth) {
      best = candidates[i];
      best_depth = depth;
    }
  }
  std::shared_ptr<const StateTokenMask> mask;
  if (best_depth >= every_token) {
    mask = masks_[best];
    num_shared_.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (best_depth >= kMinSameBytes) {
      mask = std::make_shared<const StateTokenMask>(
          build_state_token_mask_above(grammar_, returns_, *vocab_, state, *masks_[best], best_depth));
      num_partly_walked_.fetch_add(1, std::memory_order_relaxed);
    } else {
      mask = std::make_shared<const StateTokenMask>(build_state_token_mask(grammar_, returns_, *vocab_, state));
    }
    mask_bytes_.fetch_add(mask->memory_bytes(), std::memory_order_relaxed);
  }
  return mask;
}

const StateTokenMask& CompiledGrammar::state_mask(uint32_t state) const {
  std::call_once(once_[state], [&] {
    masks_[state] = build_mask(state);
    num_built_.fetch_add(1, std::memory_order_relaxed);
    // Offered to later states only once its mask is in place.
    std::lock_guard<std::mutex> lock(built_mu_);
    std::vector<uint32_t>& built = built_by_key_[state_local_key(grammar_, state)];
    if (built.size() == kCandidates) built.erase(built.begin());
    built.push_back(state);
  });
  return *masks_[state];
}

void CompiledGrammar::build_all_state_masks() const {
  for (uint32_t s = 0; s < grammar_.states.size(); ++s) {
    if (grammar_.states[s].has_byte_edges()) state_mask(s);
  }
}

}  // namespace pagoda::grammar
