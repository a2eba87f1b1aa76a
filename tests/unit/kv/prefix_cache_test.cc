// Tests for PrefixCache (src/kv/prefix_cache.h): the fixed-size hash index under heavy collisions (checked
// against std::unordered_map), and lookup: the longest chain, stopping at the first miss, never the last
// token's block.
#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace pagoda {
namespace {

TEST(PrefixCache, InsertFindErase) {
  PrefixCache cache(4);
  EXPECT_FALSE(cache.find(42));
  EXPECT_TRUE(cache.insert(42, 3));
  EXPECT_FALSE(cache.insert(42, 1));  // the first block keeps the hash
  EXPECT_EQ(cache.find(42), 3);
  EXPECT_EQ(cache.size(), 1);
  cache.erase(42, 3);
  EXPECT_FALSE(cache.find(42));
  EXPECT_EQ(cache.size(), 0);
}

TEST(PrefixCache, CollidingHashesSurviveErasure) {
  // 4 blocks -> 8 slots; hashes 3, 11, 19, 27 share home slot 3, and 7 wraps around to 0.
  PrefixCache cache(4);
  EXPECT_TRUE(cache.insert(3, 0));
  EXPECT_TRUE(cache.insert(11, 1));
  EXPECT_TRUE(cache.insert(7, 2));
  EXPECT_TRUE(cache.insert(19, 3));
  cache.erase(11, 1);
  EXPECT_EQ(cache.find(3), 0);
  EXPECT_FALSE(cache.find(11));
  EXPECT_EQ(cache.find(7), 2);
  EXPECT_EQ(cache.find(19), 3);
  cache.erase(3, 0);
  EXPECT_EQ(cache.find(7), 2);
  EXPECT_EQ(cache.find(19), 3);
}

TEST(PrefixCache, MatchesAMapUnderRandomCollidingUse) {
  constexpr int32_t kNumBlocks = 16;
  PrefixCache cache(kNumBlocks);
  std::unordered_map<BlockHash, BlockId> model;
  std::vector<BlockId> free_ids;
  for (BlockId b = 0; b < kNumBlocks; ++b) free_ids.push_back(b);
  std::mt19937 rng(7);
  for (int step = 0; step < 20000; ++step) {
    // Few distinct hashes, all low, so probe chains collide and wrap all the time.
    const BlockHash hash = rng() % 48;
    const auto it = model.find(hash);
    if (it != model.end() && rng() % 2 == 0) {
      cache.erase(hash, it->second);
      free_ids.push_back(it->second);
      model.erase(it);
    } else if (it == model.end() && !free_ids.empty()) {
      const BlockId b = free_ids.back();
      free_ids.pop_back();
      ASSERT_TRUE(cache.insert(hash, b));
      model[hash] = b;
    }
    ASSERT_EQ(cache.size(), int32_t(model.size()));
    for (BlockHash h = 0; h < 48; ++h) {
      const auto m = model.find(h);
      if (m == model.end())
        ASSERT_FALSE(cache.find(h)) << "step " << step << " hash " << h;
      else
        ASSERT_EQ(cache.find(h), m->second) << "step " << step << " hash " << h;
    }
  }
}

class PrefixCacheLookup : public ::testing::Test {
 protected:
  static constexpr int32_t kBlockSize = 4;
  // Indexes the first `num_blocks` full blocks of `tokens` to blocks first_block_id, first_block_id + 1, ...
  void index(const std::vector<TokenId>& tokens, int32_t num_blocks, BlockId first_block_id) {
    std::vector<BlockHash> hashes;
    append_block_hashes(tokens, kBlockSize, num_blocks, 0, hashes);
    for (int32_t j = 0; j < num_blocks; ++j) ASSERT_TRUE(cache_.insert(hashes[size_t(j)], first_block_id + j));
  }
  PrefixCache cache_{16};
};

TEST_F(PrefixCacheLookup, LongestChainOfFullBlocks) {
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  index(tokens, 3, 5);
  PrefixHit hit = cache_.lookup(tokens, kBlockSize, 0);
  EXPECT_EQ(hit.block_ids, (std::vector<BlockId>{5, 6, 7}));
  EXPECT_EQ(hit.num_cached_tokens, 12);
  EXPECT_EQ(hit.num_prompt_tokens, 13);
  EXPECT_EQ(hit.block_hashes.size(), 3u);
  // Another extra key finds nothing.
  EXPECT_TRUE(cache_.lookup(tokens, kBlockSize, 1).empty());
}

TEST_F(PrefixCacheLookup, NeverTheLastTokensBlock) {
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  index(tokens, 2, 0);
  // Both blocks are cached, but the 8th token must be computed to get logits, so only block 0 is a hit.
  EXPECT_EQ(cache_.lookup(tokens, kBlockSize, 0).block_ids, (std::vector<BlockId>{0}));
  const std::vector<TokenId> nine = {1, 2, 3, 4, 5, 6, 7, 8, 0};
  EXPECT_EQ(cache_.lookup(nine, kBlockSize, 0).block_ids, (std::vector<BlockId>{0, 1}));
  EXPECT_TRUE(cache_.lookup(std::vector<TokenId>{1, 2, 3, 4}, kBlockSize, 0).empty());
  EXPECT_TRUE(cache_.lookup(std::vector<TokenId>{}, kBlockSize, 0).empty());
}

TEST_F(PrefixCacheLookup, StopsAtTheFirstMiss) {
  const std::vector<TokenId> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  std::vector<BlockHash> hashes;
  append_block_hashes(tokens, kBlockSize, 3, 0, hashes);
  ASSERT_TRUE(cache_.insert(hashes[0], 0));
  ASSERT_TRUE(cache_.insert(hashes[2], 2));  // block 1 missing: block 2 is unreachable
  EXPECT_EQ(cache_.lookup(tokens, kBlockSize, 0).block_ids, (std::vector<BlockId>{0}));
  std::vector<TokenId> changed = tokens;
  changed[1] = 99;
  EXPECT_TRUE(cache_.lookup(changed, kBlockSize, 0).empty());
}

}  // namespace
}  // namespace pagoda
