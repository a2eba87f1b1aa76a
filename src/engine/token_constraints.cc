// The constraint masks a sequence's draws go through, and the grammar's step after each draw.
#include "engine/token_constraints.h"

#include <algorithm>
#include <limits>

#include "grammar/token_mask.h"

namespace pagoda {

TokenConstraints::TokenConstraints(int32_t vocab_size, std::span<const TokenId> end_of_generation_ids)
    : end_of_generation_ids_(end_of_generation_ids), mask_((size_t(vocab_size) + 31) / 32) {}

bool TokenConstraints::mask_row(Sequence& seq, int32_t num_output_tokens, std::span<float> row) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  // Before min_tokens, nothing that ends the generation may be drawn.
  const bool before_min_tokens = num_output_tokens < seq.sampling.min_tokens;
  const ReasoningGateState::Phase phase = seq.reasoning_gate.phase();
  if (seq.grammar && phase == ReasoningGateState::Phase::kReasoning) {
    // Free text, but the constrained answer is still to come: nothing may end the generation here.
    for (TokenId id : end_of_generation_ids_) row[size_t(id)] = kNegInf;
    for (TokenId id : seq.sampling.stop_token_ids) row[size_t(id)] = kNegInf;
    return true;
  }
  if (seq.grammar) {
    const size_t num_words = seq.grammar->compiled_grammar().vocabulary().mask_words();
    std::fill(mask_.begin() + std::ptrdiff_t(num_words), mask_.end(), 0u);  // a padded model vocabulary's rows
    seq.grammar->fill_mask(std::span<uint32_t>(mask_).first(num_words));
    if (phase == ReasoningGateState::Phase::kFirstToken) {  // or the token that opens the reasoning
      const TokenId start = seq.reasoning_gate.start_token();
      mask_[size_t(start) >> 5] |= 1u << (start & 31);
    }
    // A grammar that may end here and also go on goes on until min_tokens; one that can only end, ends.
    if (before_min_tokens) {
      std::vector<uint32_t>& banned = mask_scratch_;
      banned = mask_;
      for (TokenId id : end_of_generation_ids_) banned[size_t(id) >> 5] &= ~(1u << (id & 31));
      for (TokenId id : seq.sampling.stop_token_ids)
        if (size_t(id) < banned.size() * 32) banned[size_t(id) >> 5] &= ~(1u << (id & 31));
      if (std::any_of(banned.begin(), banned.end(), [](uint32_t w) { return w != 0; })) mask_.swap(banned);
    }
    return grammar::apply_token_mask(row, mask_) != 0;
  }
  if (before_min_tokens) {
    if (!seq.sampling.ignore_eos)
      for (TokenId id : end_of_generation_ids_) row[size_t(id)] = kNegInf;
    for (TokenId id : seq.sampling.stop_token_ids) row[size_t(id)] = kNegInf;
  }
  return true;
}

bool TokenConstraints::accept(Sequence& seq, SampledToken& t) {
  if (!seq.grammar) return true;
  if (!seq.reasoning_gate.take(t.token)) return true;  // the reasoning's, not the answer's
  // The mask allowed the token (a sampler never picks a -infinity logit while a finite one is left).
  if (!seq.grammar->accept_token(t.token)) return false;
  t.completes_grammar = seq.grammar->is_complete();
  return true;
}

}  // namespace pagoda
