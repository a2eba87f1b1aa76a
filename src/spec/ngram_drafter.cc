// Prompt lookup: a backwards scan for the sequence's last n-gram, longest n first.
#include "spec/ngram_drafter.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

NgramDrafter::NgramDrafter(int32_t min_ngram, int32_t max_ngram) : min_ngram_(min_ngram), max_ngram_(max_ngram) {
  PAGODA_CHECK(min_ngram >= 1 && min_ngram <= max_ngram, "n-gram sizes {}..{}", min_ngram, max_ngram);
}

void NgramDrafter::propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts) {
  drafts.clear();
  const int64_t num_tokens = int64_t(tokens.size());
  if (max_drafts < 1) return;
  for (int32_t n = std::min<int64_t>(max_ngram_, num_tokens - 1); n >= min_ngram_; --n) {
    const std::span<const TokenId> suffix = tokens.last(size_t(n));
    // The most recent earlier occurrence, starting at `start` (which must leave a token after it to propose).
    for (int64_t start = num_tokens - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t first = start + n;
      const int64_t count = std::min<int64_t>(max_drafts, num_tokens - first);
      drafts.assign(tokens.begin() + first, tokens.begin() + first + count);
      return;
    }
  }
}

}  // namespace pagoda
