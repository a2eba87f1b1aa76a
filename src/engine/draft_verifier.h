// DraftVerifier: the engine step's half of speculative decoding. For a sequence that computed its last token and
// k drafts in the step, walks the k + 1 logits rows in order: row j, masked by the sequence's constraints as a
// plain draw's row is (TokenConstraints: its grammar as the accepted drafts left it, min_tokens), gives the verdict
// on draft j (the sampler's rejection rule, Sampler::verify_draft: greedy keeps the argmax, sampled keeps the
// target distribution, so a draft the grammar forbids is always rejected); at the first rejection its replacement
// is the last token, and when every draft passes, row k gives one more. A token that completes the grammar is the
// last. Each token is judged with the accepted drafts before it as the sequence's output (penalties see them), and
// carries the logprobs and logits its request asked for, as a plain step's token does. Owns scratch rows only; the
// scheduler keeps the accepted drafts' KV and rolls back the rest.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/sampled_token.h"
#include "engine/sequence.h"
#include "engine/token_constraints.h"
#include "model/logits_view.h"

namespace pagoda {

class DraftVerifier {
 public:
  explicit DraftVerifier(int32_t vocab_size) : raw_row_(size_t(vocab_size)) {}

  // `seq`'s rows are logits rows first_row .. first_row + seq.draft_tokens.size(). Appends the accepted drafts
  // and the token after them to `sampled` (or, where the grammar allows nothing, a dead end); returns how many
  // drafts were accepted.
  int32_t verify(Sequence& seq, const LogitsView& logits, int32_t first_row, TokenConstraints& constraints,
                 std::vector<SampledToken>& sampled);

 private:
  std::vector<float> raw_row_;   // f32 [vocab]: a row before sampling changed it
  std::vector<TokenId> output_;  // the sequence's output, then the drafts accepted so far
};

}  // namespace pagoda
