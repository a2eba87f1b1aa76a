// NgramDrafter: the continuation of the most recent earlier match of the longest suffix n-gram, capped at
// max_drafts and at the end of the sequence; nothing when no suffix recurs.
#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda {
namespace {

std::vector<TokenId> propose(Drafter& d, const std::vector<TokenId>& tokens, int32_t max_drafts) {
  std::vector<TokenId> drafts{99, 99};  // cleared by propose
  d.propose(tokens, max_drafts, drafts);
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

}  // namespace
}  // namespace pagoda
