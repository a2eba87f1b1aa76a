// Verification of one sequence's drafts, row by row, stopping at the first rejection.
#include "engine/draft_verifier.h"

#include <algorithm>

#include "sampling/token_logprobs.h"

namespace pagoda {

int32_t DraftVerifier::verify(Sequence& seq, const LogitsView& logits, int32_t first_row, TokenConstraints& constraints,
                              std::vector<SampledToken>& sampled) {
  const int32_t num_drafts = int32_t(seq.draft_tokens.size());
  const std::span<const TokenId> output = seq.output();
  output_.assign(output.begin(), output.end());
  const bool keep_raw = seq.sampling.logprobs >= 0 || seq.output_logits;
  for (int32_t j = 0; j <= num_drafts; ++j) {
    const std::span<float> row = logits.row(first_row + j);
    if (keep_raw) std::copy(row.begin(), row.end(), raw_row_.begin());  // sampling edits the row
    SampledToken t;
    t.seq = &seq;
    if (!constraints.mask_row(seq, int32_t(output_.size()), row)) {
      t.grammar_dead_end = true;
      sampled.push_back(std::move(t));
      return j;
    }
    bool accepted = false;
    if (j < num_drafts) {
      const Sampler::DraftVerdict v = seq.sampler.verify_draft(row, seq.prompt(), output_, seq.draft_tokens[size_t(j)]);
      t.token = v.token;
      accepted = v.accepted;
    } else {
      t.token = seq.sampler.sample(row, seq.prompt(), output_);
    }
    if (!TokenConstraints::accept(seq, t)) {
      t.grammar_dead_end = true;
      sampled.push_back(std::move(t));
      return j;
    }
    if (seq.sampling.logprobs >= 0) t.logprobs = compute_token_logprobs(raw_row_, t.token, seq.sampling.logprobs);
    if (seq.output_logits) t.logits = raw_row_;
    const bool last = !accepted || t.completes_grammar;
    sampled.push_back(std::move(t));
    if (last) return accepted ? j + 1 : j;
    output_.push_back(seq.draft_tokens[size_t(j)]);
  }
  return num_drafts;
}

}  // namespace pagoda
