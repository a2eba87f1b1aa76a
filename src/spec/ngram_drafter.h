// NgramDrafter: drafts copied from text seen before. Prompt lookup (Saxena 2023; vLLM's "ngram" method): the last n
// tokens of a sequence, n from max_ngram down to min_ngram, are searched for earlier in the same sequence (prompt
// and output), and the tokens that followed the most recent match are the drafts. Optionally, drafts are also
// chained from n-gram tables (spec/ngram_table.h; llama.cpp's lookup caches): a corpus given at start-up and the
// outputs of earlier requests, each draft the most frequent follower of the longest n-gram the tables know,
// appended before the next is looked up; they replace the sequence's own drafts when their first n-gram is the
// longer match. No model: it pays off where text repeats itself (summaries, code edits, stories that reuse their
// names and phrases, a model's stock phrases).
#pragma once

#include <cstdint>
#include <memory>

#include "spec/drafter.h"
#include "spec/ngram_table.h"

namespace pagoda {

class NgramDrafter final : public Drafter {
 public:
  struct Options {
    int32_t min_ngram = 1;  // prompt lookup: the shortest suffix looked up
    int32_t max_ngram = 4;  // and the longest, tried first
    // The corpus table (borrowed, read-only, may be null) and the n-gram entries kept from earlier requests'
    // outputs (per generation, NgramTable's bound; 0: none learned).
    const NgramTable* corpus = nullptr;
    int64_t history_entries = 0;
  };
  // Table drafts: the shortest n-gram consulted, and how sure its follower must be (sightings, share of them).
  static constexpr int32_t kTableMinN = 2;
  static constexpr int32_t kTableMinCount = 1;
  static constexpr double kTableMinShare = 0.5;
  static constexpr int32_t kTableMaxN = 4;

  // 1 <= min_ngram <= max_ngram.
  NgramDrafter(int32_t min_ngram, int32_t max_ngram)
      : NgramDrafter(Options{.min_ngram = min_ngram, .max_ngram = max_ngram}) {}
  explicit NgramDrafter(const Options& options);
  // Table drafts come with chances: the follower's share of the n-gram's sightings, one sighting added to them
  // (count / (total + 1): a follower seen once of once is no certainty). Lookup drafts come without.
  void propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
               std::vector<float>& chances) override;
  void learn(std::span<const TokenId> tokens, int64_t first_output) override;

  const NgramTable* history() const { return history_.get(); }

 private:
  // Each writes its drafts and returns the length of the n-gram its first draft followed (0: no drafts).
  int32_t prompt_lookup(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts) const;
  int32_t table_drafts(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
                       std::vector<float>& chances);

  Options options_;
  std::unique_ptr<NgramTable> history_;  // null when history_entries is 0
  std::vector<TokenId> table_scratch_;
  std::vector<float> table_chances_scratch_;
  std::vector<TokenId> context_scratch_;  // table_drafts' growing context (no allocation a step)
};

}  // namespace pagoda
