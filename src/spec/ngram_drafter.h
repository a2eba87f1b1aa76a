// NgramDrafter: prompt lookup decoding (Saxena 2023; vLLM's "ngram" speculative method). The last n tokens of a
// sequence, for n from max_ngram down to min_ngram, are searched for earlier in the same sequence (prompt and
// output); at the most recent earlier match, the tokens that followed it are the drafts. No model: it pays off
// where text repeats itself (summaries, code edits, stories that reuse their names and phrases).
#pragma once

#include <cstdint>

#include "spec/drafter.h"

namespace pagoda {

class NgramDrafter final : public Drafter {
 public:
  // 1 <= min_ngram <= max_ngram.
  NgramDrafter(int32_t min_ngram, int32_t max_ngram);
  void propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts) override;

 private:
  int32_t min_ngram_;
  int32_t max_ngram_;
};

}  // namespace pagoda
