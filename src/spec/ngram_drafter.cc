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
  // One backward pass over the positions e holding the last token (each must leave a token after it to propose):
  // the first e whose match, counted backwards from it, reaches max_ngram wins at once, else the longest match
  // seen, the most recent on a tie - the most recent occurrence of the longest suffix that occurs, as a scan per n
  // from max_ngram down would find, for one pass rather than one per n.
  const int64_t num_tokens = int64_t(tokens.size());
  if (num_tokens < 2) return 0;
  const int32_t max_n = int32_t(std::min<int64_t>(options_.max_ngram, num_tokens - 1));
  const TokenId last = tokens[size_t(num_tokens - 1)];
  int32_t best_n = 0;
  int64_t best_end = -1;
  for (int64_t e = num_tokens - 2; e >= 0; --e) {
    if (tokens[size_t(e)] != last) continue;
    int32_t n = 1;
    while (n < max_n && n <= e && tokens[size_t(e - n)] == tokens[size_t(num_tokens - 1 - n)]) ++n;
    if (n > best_n) {
      best_n = n;
      best_end = e;
      if (n == max_n) break;
    }
  }
  if (best_n < options_.min_ngram) return 0;
  const int64_t first = best_end + 1;
  const int64_t count = std::min<int64_t>(max_drafts, num_tokens - first);
  drafts.assign(tokens.begin() + first, tokens.begin() + first + count);
  return best_n;
}

int32_t NgramDrafter::table_drafts(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
                                   std::vector<float>& chances) {
  drafts.clear();
  chances.clear();
  if (options_.corpus == nullptr && history_ == nullptr) return 0;
  // The context grows by each draft; only its last kTableMaxN tokens are ever looked up.
  std::vector<TokenId>& context = context_scratch_;
  context.assign(tokens.end() - std::min<int64_t>(int64_t(tokens.size()), kTableMaxN), tokens.end());
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
    chances.push_back(float(guess->count) / float(guess->total + 1));
    context.push_back(guess->token);
  }
  return first_n;
}

void NgramDrafter::propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
                           std::vector<float>& chances) {
  drafts.clear();
  chances.clear();
  if (max_drafts < 1) return;
  // The source whose match is longer knows more of the context; on a tie the sequence's own text wins.
  const int32_t lookup_n = prompt_lookup(tokens, max_drafts, drafts);
  // The tables' matches are at most kTableMaxN long: a lookup match that long already wins.
  if ((options_.corpus == nullptr && history_ == nullptr) || lookup_n >= kTableMaxN) return;
  std::vector<TokenId>& from_tables = table_scratch_;
  if (table_drafts(tokens, max_drafts, from_tables, table_chances_scratch_) > lookup_n) {
    drafts.swap(from_tables);
    chances.swap(table_chances_scratch_);
  }
}

void NgramDrafter::learn(std::span<const TokenId> tokens, int64_t first_output) {
  if (history_) history_->add(tokens, first_output);
}

}  // namespace pagoda
