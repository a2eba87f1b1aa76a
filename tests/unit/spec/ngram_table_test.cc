// NgramTable: followers counted per n-gram, the longest known n-gram answering, the thresholds, the slot bound and
// the two generations that bound its memory.
#include "spec/ngram_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda {
namespace {

using Tokens = std::vector<TokenId>;

TEST(NgramTable, TheMostFrequentFollowerOfTheLongestKnownNgramAnswers) {
  NgramTable t(3, 1000);
  t.add(Tokens{1, 2, 3, 9, 1, 2, 3, 9, 5, 2, 3, 7});
  // "2 3" was followed by 9 twice and 7 once; "1 2 3" only by 9; "5 2 3" never seen.
  auto g = t.next(Tokens{1, 2, 3}, 1, 1, 0.0);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->token, 9);
  EXPECT_EQ(g->n, 3);
  EXPECT_EQ(g->count, 2);
  EXPECT_EQ(g->total, 2);
  g = t.next(Tokens{8, 2, 3}, 1, 1, 0.0);  // "8 2 3" unknown: "2 3" answers
  ASSERT_TRUE(g);
  EXPECT_EQ(g->token, 9);
  EXPECT_EQ(g->n, 2);
  EXPECT_EQ(g->count, 2);
  EXPECT_EQ(g->total, 3);
  EXPECT_FALSE(t.next(Tokens{4}, 1, 1, 0.0));  // never seen
  EXPECT_FALSE(t.next(Tokens{}, 1, 1, 0.0));
}

TEST(NgramTable, ThresholdsFallBackToShorterNgramsOrNothing) {
  NgramTable t(2, 1000);
  t.add(Tokens{4, 1, 5, 6, 1, 5, 6, 1, 7, 8, 1, 7});
  // "4 1" -> 5 once; "1" -> 5 twice, 7 twice (tie: the lower id).
  auto g = t.next(Tokens{4, 1}, 1, 2, 0.0);  // "4 1" has one sighting only; "1" has two
  ASSERT_TRUE(g);
  EXPECT_EQ(g->n, 1);
  EXPECT_EQ(g->token, 5);
  EXPECT_FALSE(t.next(Tokens{4, 1}, 1, 3, 0.0));
  EXPECT_FALSE(t.next(Tokens{9, 1}, 1, 1, 0.6));  // "1": 5 has 2 of 4
  EXPECT_FALSE(t.next(Tokens{4, 1}, 2, 2, 0.0));  // min_n 2: "1" is not consulted
}

TEST(NgramTable, AddLearnsOnlyFollowersFromFirstNext) {
  NgramTable t(2, 1000);
  t.add(Tokens{1, 2, 3, 4}, 3);  // only "2 3" -> 4 and "3" -> 4
  EXPECT_FALSE(t.next(Tokens{1}, 1, 1, 0.0));
  EXPECT_FALSE(t.next(Tokens{2}, 1, 1, 0.0));
  auto g = t.next(Tokens{2, 3}, 1, 1, 0.0);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->token, 4);
  EXPECT_EQ(g->n, 2);
  EXPECT_EQ(t.num_entries(), 2);
}

TEST(NgramTable, ANewFollowerDisplacesTheRarestWhenTheSlotsAreFull) {
  NgramTable t(1, 1000);
  Tokens text;
  for (int rep = 0; rep < 3; ++rep) text.insert(text.end(), {1, 10});  // 10 three times
  for (TokenId f : {11, 12, 13, 14}) text.insert(text.end(), {1, f});  // four singles, into three slots
  t.add(text);
  auto g = t.next(Tokens{1}, 1, 1, 0.0);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->token, 10);
  EXPECT_EQ(g->count, 3);
  EXPECT_EQ(g->total, 3 + 3);  // 10's three and three kept singles (14 displaced one of them)
}

TEST(NgramTable, GenerationsBoundTheEntriesAndForgetTheOldestText) {
  NgramTable t(1, 4);
  t.add(Tokens{1, 2});  // "1" -> 2
  t.add(Tokens{3, 4, 5, 6});  // "3", "4", "5": the generation is full at 4
  EXPECT_TRUE(t.full());
  EXPECT_TRUE(t.next(Tokens{1}, 1, 1, 0.0));
  t.add(Tokens{6, 7});  // a new n-gram: a new generation; "1".."5" still answer from the previous
  EXPECT_EQ(t.num_entries(), 5);
  EXPECT_TRUE(t.next(Tokens{1}, 1, 1, 0.0));
  t.add(Tokens{20, 21, 22, 23, 24, 25});  // fills the second generation and starts a third: "1" is gone
  EXPECT_FALSE(t.next(Tokens{1}, 1, 1, 0.0));
  EXPECT_LE(t.num_entries(), 8);
  auto g = t.next(Tokens{24}, 1, 1, 0.0);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->token, 25);
}

TEST(NgramTable, AnNgramSeenAgainKeepsItsCountsAcrossAGeneration) {
  NgramTable t(1, 2);
  t.add(Tokens{1, 2, 1, 2, 1, 2});  // "1" -> 2 three times, "2" -> 1 twice
  t.add(Tokens{7, 8});  // a new generation
  t.add(Tokens{1, 2});  // "1" copied from the previous generation, then counted
  auto g = t.next(Tokens{1}, 1, 1, 0.0);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->count, 4);
}

}  // namespace
}  // namespace pagoda
