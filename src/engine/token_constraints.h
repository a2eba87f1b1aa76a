// TokenConstraints: what a sequence's next draw may be, applied to its logits row before every draw: a plain step's
// (Engine::sample_into) and each verified draft's (DraftVerifier) alike, so constrained requests speculate too.
// With a grammar, the grammar's token mask, its end tokens held off until min_tokens (unless ending is all it
// allows); without one, the end and stop tokens held off until min_tokens. After the draw, the grammar takes the
// token. A reasoning model's grammar holds only after its reasoning (reasoning_gate.h): free text before, end tokens
// held off. Owns scratch masks only; the sequence owns its grammar and gate state.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "engine/sampled_token.h"
#include "engine/sequence.h"

namespace pagoda {

class TokenConstraints {
 public:
  // `end_of_generation_ids`: the tokenizer's end tokens; borrowed, must outlive this.
  TokenConstraints(int32_t vocab_size, std::span<const TokenId> end_of_generation_ids);

  // Sets every logit the next draw may not take to -infinity. `num_output_tokens`: the sequence's output so far,
  // drafts accepted in this step included. False: the grammar allows no token at all (the request cannot go on).
  bool mask_row(Sequence& seq, int32_t num_output_tokens, std::span<float> row);
  // The drawn token into the sequence's grammar; sets t.completes_grammar. False when the grammar cannot take it
  // (a grammar so ambiguous that its matcher dropped stacks, grammar_matcher.h): the request cannot go on.
  static bool accept(Sequence& seq, SampledToken& t);

 private:
  std::span<const TokenId> end_of_generation_ids_;
  std::vector<uint32_t> mask_;          // a grammar's token mask, [vocab / 32 rounded up]
  std::vector<uint32_t> mask_scratch_;  // the same, end tokens cleared (min_tokens)
};

}  // namespace pagoda
