// Tests for BlockPool (src/kv/block_pool.h), exact block ids: allocation order, all-or-nothing allocation,
// where freed blocks go (uncached to the front, cached to the LRU end), eviction unindexing, reviving a cached
// block, the counters, and the checks that catch misuse.
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda {
namespace {

using Ids = std::vector<BlockId>;

TEST(BlockPool, FreshBlocksComeInIdOrder) {
  BlockPool pool(6);
  EXPECT_EQ(pool.allocate(3), Ids({0, 1, 2}));
  EXPECT_EQ(pool.allocate_one(), 3);
  EXPECT_EQ(pool.num_total(), 6);
  EXPECT_EQ(pool.num_used(), 4);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({4, 5}));
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.ref_count(5), 0);
}

TEST(BlockPool, OutOfBlocksAllocatesNothing) {
  BlockPool pool(4);
  ASSERT_TRUE(pool.allocate(3));
  EXPECT_FALSE(pool.allocate(2));
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({3}));
  EXPECT_EQ(pool.allocate(0), Ids());
  EXPECT_EQ(pool.allocate_one(), 3);
  EXPECT_FALSE(pool.allocate_one());
  EXPECT_FALSE(pool.allocate(1));
}

TEST(BlockPool, UncachedFreedBlocksAreReusedFirst) {
  BlockPool pool(6);
  ASSERT_TRUE(pool.allocate(4));  // 0..3
  pool.release(1);
  pool.release(3);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({3, 1, 4, 5}));
  EXPECT_EQ(pool.allocate(2), Ids({3, 1}));
}

TEST(BlockPool, RefCountsKeepSharedBlocksUsed) {
  BlockPool pool(3);
  ASSERT_TRUE(pool.allocate(1));
  pool.retain(0);
  pool.retain(0);
  EXPECT_EQ(pool.ref_count(0), 3);
  pool.release(0);
  pool.release(0);
  EXPECT_EQ(pool.num_used(), 1);
  pool.release(0);
  EXPECT_EQ(pool.num_used(), 0);
  EXPECT_EQ(pool.ref_count(0), 0);
}

TEST(BlockPool, CachedBlocksGoToTheLruEndAndAreEvictedLast) {
  PrefixCache index(6);
  BlockPool pool(6, &index);
  ASSERT_EQ(pool.allocate(4), Ids({0, 1, 2, 3}));
  EXPECT_TRUE(pool.cache_block(0, 100));
  EXPECT_TRUE(pool.cache_block(1, 101));
  EXPECT_TRUE(pool.cache_block(2, 102));
  EXPECT_EQ(pool.num_cached(), 0);  // cached but in use
  pool.release(2);
  pool.release(0);
  pool.release(3);  // uncached
  pool.release(1);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({3, 4, 5, 2, 0, 1}));
  EXPECT_EQ(pool.num_cached(), 3);
  EXPECT_EQ(pool.num_free(), 6);

  // Uncached blocks first; then the least recently freed cached block (2), whose hash leaves the index.
  EXPECT_EQ(pool.allocate(3), Ids({3, 4, 5}));
  EXPECT_EQ(index.find(102), 2);
  EXPECT_EQ(pool.allocate_one(), 2);
  EXPECT_FALSE(index.find(102));
  EXPECT_FALSE(pool.is_cached(2));
  EXPECT_FALSE(pool.block_hash(2));
  EXPECT_EQ(pool.num_cached(), 2);
  EXPECT_EQ(index.find(100), 0);
  EXPECT_EQ(index.find(101), 1);
  EXPECT_EQ(pool.allocate_one(), 0);
  EXPECT_EQ(pool.allocate_one(), 1);
  EXPECT_EQ(index.size(), 0);
  EXPECT_EQ(pool.num_cached(), 0);
}

TEST(BlockPool, RetainRevivesACachedFreeBlock) {
  PrefixCache index(4);
  BlockPool pool(4, &index);
  ASSERT_TRUE(pool.allocate(2));
  ASSERT_TRUE(pool.cache_block(0, 7));
  pool.release(0);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({2, 3, 0}));
  pool.retain(0);  // a prefix hit
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({2, 3}));
  EXPECT_EQ(pool.num_cached(), 0);
  EXPECT_EQ(pool.block_hash(0), 7u);
  pool.release(0);
  EXPECT_EQ(pool.num_cached(), 1);
}

TEST(BlockPool, DuplicateHashLeavesTheSecondBlockUncached) {
  PrefixCache index(4);
  BlockPool pool(4, &index);
  ASSERT_TRUE(pool.allocate(2));
  EXPECT_TRUE(pool.cache_block(0, 9));
  EXPECT_TRUE(pool.cache_block(0, 9));  // again: already indexed
  EXPECT_FALSE(pool.cache_block(1, 9));
  EXPECT_FALSE(pool.is_cached(1));
  pool.release(1);
  EXPECT_EQ(pool.free_blocks_in_order(), Ids({1, 2, 3}));
}

TEST(BlockPool, WithoutAnIndexNothingIsCached) {
  BlockPool pool(2);
  ASSERT_TRUE(pool.allocate(1));
  EXPECT_FALSE(pool.cache_block(0, 1));
  pool.release(0);
  EXPECT_EQ(pool.num_cached(), 0);
}

TEST(BlockPoolDeathTest, MisuseIsABug) {
  BlockPool pool(2);
  EXPECT_DEATH(pool.release(0), "released more often than retained");
  EXPECT_DEATH(pool.retain(1), "free and uncached");
  EXPECT_DEATH(pool.retain(2), "outside the pool");
  EXPECT_DEATH(pool.cache_block(0, 1), "only a block in use");
}

}  // namespace
}  // namespace pagoda
