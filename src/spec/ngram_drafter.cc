// Prompt lookup (a backwards scan for the sequence's last n-gram, longest n first) and drafts chained from the
// n-gram tables; the longer first match wins.
#include "spec/ngram_drafter.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

NgramDrafter::NgramDrafter(const Options& options) : options_(options) {
  PAGODA_CHECK(options.min_ngram >= 1 && options.min_ngram <= options.max_ngram, "n-gram sizes {}..{}",
               options.min_ngram, options.max_ngram);
  PAGODA_CHECK(options.history_entries >= 0, "n-gram history of {} entries", options.history_entries);
  if (options.history_entries > 0) history_ = std::make_unique<NgramTable>(kTableMaxN, options.history_entries);
}

int32_t NgramDrafter::prompt_lookup(std::span<const TokenId> tokens, int32_t max_drafts,
                                    std::vector<TokenId>& drafts) const {
  const int64_t num_tokens = int64_t(tokens.size());
  for (int32_t n = std::min<int64_t>(options_.max_ngram, num_tokens - 1); n >= options_.min_ngram; --n) {
    const std::span<const TokenId> suffix = tokens.last(size_t(n));
    // The most recent earlier occurrence, starting at `start` (which must leave a token after it to propose).
    for (int64_t start = num_tokens - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t first = start + n;
      const int64_t count = std::min<int64_t>(max_drafts, num_tokens - first);
      drafts.assign(tokens.begin() + first, tokens.begin() + first + count);
      return n;
    }
  }
  return 0;
}

int32_t NgramDrafter::table_drafts(std::span<const TokenId> tokens, int32_t max_drafts,
                                   std::vector<TokenId>& drafts) const {
  drafts.clear();
  if (options_.corpus == nullptr && history_ == nullptr) return 0;
  // The context grows by each draft; only its last kTableMaxN tokens are ever looked up.
  std::vector<TokenId> context(tokens.end() - std::min<int64_t>(int64_t(tokens.size()), kTableMaxN), tokens.end());
  int32_t first_n = 0;
  while (int32_t(drafts.size()) < max_drafts) {
    std::optional<NgramTable::Guess> guess;
    for (const NgramTable* table : {static_cast<const NgramTable*>(history_.get()), options_.corpus}) {
      if (table == nullptr) continue;
      std::optional<NgramTable::Guess> g = table->next(context, kTableMinN, kTableMinCount, kTableMinShare);
      if (g && (!guess || g->n > guess->n)) guess = g;  // the longer match knows more
    }
    if (!guess) break;
    if (drafts.empty()) first_n = guess->n;
    drafts.push_back(guess->token);
    context.push_back(guess->token);
  }
  return first_n;
}

void NgramDrafter::propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts) {
  drafts.clear();
  if (max_drafts < 1) return;
  // The source whose match is longer knows more of the context; on a tie the sequence's own text wins.
  const int32_t lookup_n = prompt_lookup(tokens, max_drafts, drafts);
  // The tables' matches are at most kTableMaxN long: a lookup match that long already wins.
  if ((options_.corpus == nullptr && history_ == nullptr) || lookup_n >= kTableMaxN) return;
  std::vector<TokenId>& from_tables = table_scratch_;
  if (table_drafts(tokens, max_drafts, from_tables) > lookup_n) drafts.swap(from_tables);
}

void NgramDrafter::learn(std::span<const TokenId> tokens, int64_t first_output) {
  if (history_) history_->add(tokens, first_output);
}

}  // namespace pagoda
