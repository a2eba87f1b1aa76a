// CompiledGrammar (compiled_grammar.h): the lazily built per-state token masks.
#include "grammar/compiled_grammar.h"

namespace pagoda::grammar {

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab)
    : grammar_(std::move(grammar)), returns_(ReturnSites::of(grammar_)), vocab_(std::move(vocab)) {
  once_ = std::make_unique<std::once_flag[]>(grammar_.states.size());
  masks_.resize(grammar_.states.size());
}

const StateTokenMask& CompiledGrammar::state_mask(uint32_t state) const {
  std::call_once(once_[state], [&] {
    masks_[state] = std::make_unique<StateTokenMask>(build_state_token_mask(grammar_, returns_, *vocab_, state));
    num_built_.fetch_add(1, std::memory_order_relaxed);
    mask_bytes_.fetch_add(masks_[state]->memory_bytes(), std::memory_order_relaxed);
  });
  return *masks_[state];
}

void CompiledGrammar::build_all_state_masks() const {
  for (uint32_t s = 0; s < grammar_.states.size(); ++s) {
    if (grammar_.states[s].has_byte_edges()) state_mask(s);
  }
}

}  // namespace pagoda::grammar
