// NgramDrafter: the continuation of the most recent earlier match of the longest suffix n-gram, capped at
// max_drafts and at the end of the sequence; nothing when no suffix recurs. Then the n-gram tables (a corpus, the
// outputs learned from finished requests), whose drafts replace the sequence's own when they follow a longer match.
#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

#include "spec/ngram_table.h"

#include <algorithm>
#include <random>
#include <vector>

namespace pagoda {
namespace {

std::vector<TokenId> propose(Drafter& d, const std::vector<TokenId>& tokens, int32_t max_drafts) {
  std::vector<TokenId> drafts{99, 99};  // cleared by propose
  std::vector<float> chances{0.5f};
  d.propose(tokens, max_drafts, drafts, chances);
  EXPECT_TRUE(chances.empty() || chances.size() == drafts.size());
  return drafts;
}

TEST(NgramDrafter, ProposesWhatFollowedTheMostRecentEarlierMatch) {
  NgramDrafter d(1, 3);
  // Suffix "1 2" occurs at 0 (followed by 3 4) and at 5 (followed by 7 8); the most recent wins.
  EXPECT_EQ(propose(d, {1, 2, 3, 4, 0, 1, 2, 7, 8, 5, 1, 2}, 2), (std::vector<TokenId>{7, 8}));
  EXPECT_EQ(propose(d, {1, 2, 3, 4, 0, 1, 2, 7, 8, 5, 1, 2}, 5), (std::vector<TokenId>{7, 8, 5, 1, 2}));
}

TEST(NgramDrafter, PrefersTheLongestNgram) {
  NgramDrafter d(1, 3);
  // The 1-gram "3" last occurs at 5 (followed by 9), but the 3-gram "1 2 3" occurs at 0 (followed by 4 5).
  EXPECT_EQ(propose(d, {1, 2, 3, 4, 5, 3, 9, 1, 2, 3}, 2), (std::vector<TokenId>{4, 5}));
  NgramDrafter only_unigrams(1, 1);
  EXPECT_EQ(propose(only_unigrams, {1, 2, 3, 4, 5, 3, 9, 1, 2, 3}, 2), (std::vector<TokenId>{9, 1}));
}

TEST(NgramDrafter, StopsAtTheEndOfTheSequenceAndAtMaxDrafts) {
  NgramDrafter d(1, 2);
  EXPECT_EQ(propose(d, {7, 7, 7}, 4), (std::vector<TokenId>{7}));  // "7 7" at 0, one token after it
  EXPECT_EQ(propose(d, {1, 2, 1, 2, 1, 2}, 3), (std::vector<TokenId>{1, 2}));
  EXPECT_TRUE(propose(d, {1, 2, 1, 2, 1, 2}, 0).empty());
}

TEST(NgramDrafter, ProposesNothingWithoutARecurringSuffix) {
  NgramDrafter d(2, 4);
  EXPECT_TRUE(propose(d, {1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(propose(d, {1, 2, 3, 1}, 4).empty());  // "1" recurs but min_ngram is 2
  EXPECT_TRUE(propose(d, {5}, 4).empty());
  EXPECT_TRUE(propose(d, {}, 4).empty());
}

// The definition, a scan per n from the longest down, each from the most recent position; the drafter finds the
// same match in one pass.
std::vector<TokenId> lookup_by_definition(const std::vector<TokenId>& tokens, int32_t min_n, int32_t max_n,
                                          int32_t max_drafts) {
  const int64_t num = int64_t(tokens.size());
  for (int64_t n = std::min<int64_t>(max_n, num - 1); n >= min_n; --n)
    for (int64_t start = num - n - 1; start >= 0; --start)
      if (std::equal(tokens.end() - n, tokens.end(), tokens.begin() + start))
        return {tokens.begin() + start + n,
                tokens.begin() + start + n + std::min<int64_t>(max_drafts, num - start - n)};
  return {};
}

TEST(NgramDrafter, OnePassFindsTheMatchOfTheDefinition) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    const int32_t vocab = 2 + int32_t(rng() % 6);  // small vocabularies: matches of every length
    std::vector<TokenId> tokens(rng() % 40);
    for (TokenId& t : tokens) t = TokenId(rng() % uint32_t(vocab));
    const int32_t min_n = 1 + int32_t(rng() % 3), max_n = min_n + int32_t(rng() % 4);
    const int32_t max_drafts = int32_t(rng() % 6);
    NgramDrafter d(min_n, max_n);
    ASSERT_EQ(propose(d, tokens, max_drafts), lookup_by_definition(tokens, min_n, max_n, max_drafts))
        << "trial " << trial << ", n " << min_n << ".." << max_n;
  }
}

TEST(NgramDrafter, ChainsDraftsFromTheCorpusWhereTheSequenceHasNoMatch) {
  NgramTable corpus(NgramDrafter::kTableMaxN, 1000);
  corpus.add(std::vector<TokenId>{10, 11, 12, 13, 14});
  NgramDrafter d(NgramDrafter::Options{.min_ngram = 1, .max_ngram = 4, .corpus = &corpus});
  // "10 11" -> 12, then "11 12" -> 13, "12 13" -> 14, "13 14" unknown.
  EXPECT_EQ(propose(d, {1, 2, 10, 11}, 8), (std::vector<TokenId>{12, 13, 14}));
  EXPECT_EQ(propose(d, {1, 2, 10, 11}, 2), (std::vector<TokenId>{12, 13}));
  EXPECT_TRUE(propose(d, {1, 2, 3, 11}, 8).empty());  // "3 11" unknown, and single tokens are not looked up
  // The longer first match wins: the sequence's own "10" (followed by 5) where the tables know nothing longer; the
  // corpus's "10 11" over the sequence's own "11" (followed by 3).
  EXPECT_EQ(propose(d, {10, 5, 10}, 8), (std::vector<TokenId>{5, 10}));
  EXPECT_EQ(propose(d, {11, 3, 10, 11}, 8), (std::vector<TokenId>{12, 13, 14}));
  EXPECT_EQ(propose(d, {2, 10, 11, 3, 2, 10, 11}, 2), (std::vector<TokenId>{3, 2}));  // its own "2 10 11"
}

// Table drafts carry chances, count / (total + 1) of the n-gram each followed; the sequence's own drafts none.
TEST(NgramDrafter, TableDraftsComeWithTheirFollowersShareAndLookupDraftsWithout) {
  NgramTable corpus(NgramDrafter::kTableMaxN, 1000);
  corpus.add(std::vector<TokenId>{10, 11, 12, 13, 20, 10, 11, 12, 14, 21, 10, 11, 12, 13, 20, 30, 11, 12, 13, 22});
  NgramDrafter d(NgramDrafter::Options{.min_ngram = 1, .max_ngram = 4, .corpus = &corpus});
  std::vector<TokenId> drafts;
  std::vector<float> chances;
  // After "1 10 11" the longest known suffix "10 11" was followed by 12 three times of 3; then "10 11 12" by 13
  // twice of 3 (14 once); then "10 11 12 13" by 20 twice of 2.
  d.propose(std::vector<TokenId>{1, 10, 11}, 3, drafts, chances);
  EXPECT_EQ(drafts, (std::vector<TokenId>{12, 13, 20}));
  ASSERT_EQ(chances.size(), 3u);
  EXPECT_FLOAT_EQ(chances[0], 3.0f / 4.0f);
  EXPECT_FLOAT_EQ(chances[1], 2.0f / 4.0f);
  EXPECT_FLOAT_EQ(chances[2], 2.0f / 3.0f);
  d.propose(std::vector<TokenId>{5, 6, 7, 5, 6}, 3, drafts, chances);  // the sequence's own "5 6" -> 7 5 6
  EXPECT_EQ(drafts, (std::vector<TokenId>{7, 5, 6}));
  EXPECT_TRUE(chances.empty());
}

TEST(NgramDrafter, LearnsFinishedOutputsOnlyWithAHistory) {
  NgramDrafter without(1, 4);
  without.learn(std::vector<TokenId>{5, 6, 7, 8}, 2);
  EXPECT_TRUE(propose(without, {9, 5, 6}, 4).empty());
  EXPECT_EQ(without.history(), nullptr);

  NgramDrafter d(NgramDrafter::Options{.history_entries = 100});
  d.learn(std::vector<TokenId>{5, 6, 7, 8}, 2);  // the output is 7 8: "5 6" -> 7, "6 7" -> 8
  EXPECT_EQ(propose(d, {9, 5, 6}, 4), (std::vector<TokenId>{7, 8}));
  EXPECT_TRUE(propose(d, {9, 4, 5}, 4).empty());  // "4 5" -> 6 was prompt, not output
  ASSERT_NE(d.history(), nullptr);
}

TEST(NgramDrafter, TheLongerMatchOfTheTwoTablesWins) {
  NgramTable corpus(NgramDrafter::kTableMaxN, 1000);
  corpus.add(std::vector<TokenId>{2, 3, 4});  // "2 3" -> 4
  NgramDrafter d(NgramDrafter::Options{.corpus = &corpus, .history_entries = 100});
  d.learn(std::vector<TokenId>{1, 2, 3, 5}, 3);  // "1 2 3" -> 5, "2 3" -> 5
  EXPECT_EQ(propose(d, {7, 1, 2, 3}, 1), (std::vector<TokenId>{5}));
  EXPECT_EQ(propose(d, {7, 8, 2, 3}, 1), (std::vector<TokenId>{5}));  // a tie at n = 2: the history answers
}

}  // namespace
}  // namespace pagoda
