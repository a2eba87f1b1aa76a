// Tests for KvCacheManager (src/kv/kv_cache_manager.h) with a block size of 4 and exact block ids: prefix
// sharing, the last-token rule, free and LRU reuse order, eviction, copy-on-write after fork, out of blocks
// leaving every piece of state unchanged, --no-prefix-cache, and the figures.
#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace pagoda {
namespace {

using Ids = std::vector<BlockId>;
using Tokens = std::vector<TokenId>;

Ids table_of(const SeqKvState& seq) {
  return Ids(seq.block_table.block_ids().begin(), seq.block_table.block_ids().end());
}

Tokens iota_tokens(int32_t n, TokenId first) {
  Tokens tokens(static_cast<size_t>(n));
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

std::vector<BlockCopy> copies_of(const KvCacheManager& kv) {
  return std::vector<BlockCopy>(kv.pending_copies().begin(), kv.pending_copies().end());
}

// Everything allocate_slots may touch, to show that a failed call touched none of it.
struct Snapshot {
  Ids free_order;
  std::vector<int32_t> ref_counts;
  Ids table;
  int32_t num_computed_tokens;
  std::vector<BlockHash> block_hashes;
  size_t num_pending_copies;
  KvCacheStats stats;

  Snapshot(const KvCacheManager& kv, const SeqKvState& seq)
      : free_order(kv.pool().free_blocks_in_order()),
        table(table_of(seq)),
        num_computed_tokens(seq.num_computed_tokens),
        block_hashes(seq.block_hashes),
        num_pending_copies(kv.pending_copies().size()),
        stats(kv.stats()) {
    for (BlockId b = 0; b < kv.pool().num_total(); ++b) ref_counts.push_back(kv.pool().ref_count(b));
  }
  void expect_same(const KvCacheManager& kv, const SeqKvState& seq) const {
    const Snapshot now(kv, seq);
    EXPECT_EQ(now.free_order, free_order);
    EXPECT_EQ(now.ref_counts, ref_counts);
    EXPECT_EQ(now.table, table);
    EXPECT_EQ(now.num_computed_tokens, num_computed_tokens);
    EXPECT_EQ(now.block_hashes, block_hashes);
    EXPECT_EQ(now.num_pending_copies, num_pending_copies);
    EXPECT_EQ(now.stats.num_used_blocks, stats.num_used_blocks);
    EXPECT_EQ(now.stats.num_cached_blocks, stats.num_cached_blocks);
    EXPECT_EQ(now.stats.num_wasted_slots, stats.num_wasted_slots);
    EXPECT_EQ(now.stats.num_prefix_query_tokens, stats.num_prefix_query_tokens);
    EXPECT_EQ(now.stats.num_prefix_hit_tokens, stats.num_prefix_hit_tokens);
  }
};

class KvCacheManagerTest : public ::testing::Test {
 protected:
  static KvCacheManager::Options options(int32_t num_blocks, bool enable_prefix_cache = true) {
    KvCacheManager::Options o;
    o.num_blocks = num_blocks;
    o.block_size = 4;
    o.enable_prefix_cache = enable_prefix_cache;
    return o;
  }
  // Admits a prompt the way the scheduler will: lookup, then allocate the rest in one step.
  static bool admit(KvCacheManager& kv, SeqKvState& seq, const Tokens& prompt) {
    const PrefixHit hit = kv.lookup_prefix(prompt);
    return kv.allocate_slots(seq, int32_t(prompt.size()) - hit.num_cached_tokens, hit);
  }
};

TEST_F(KvCacheManagerTest, SharedPrefixReusesTheCachedBlocks) {
  KvCacheManager kv(options(8));
  const Tokens a_prompt = iota_tokens(10, 1);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, a_prompt));
  EXPECT_EQ(table_of(a), Ids({0, 1, 2}));
  EXPECT_EQ(a.num_computed_tokens, 10);
  EXPECT_EQ(a.block_table.slot_id(9), 2 * 4 + 1);
  kv.cache_full_blocks(a, a_prompt);
  EXPECT_EQ(a.block_hashes.size(), 2u);
  EXPECT_TRUE(kv.pool().is_cached(0));
  EXPECT_TRUE(kv.pool().is_cached(1));
  EXPECT_FALSE(kv.pool().is_cached(2));  // partial

  // A second prompt shares the first 8 tokens.
  Tokens b_prompt(a_prompt.begin(), a_prompt.begin() + 8);
  b_prompt.insert(b_prompt.end(), {50, 51, 52});
  const PrefixHit hit = kv.lookup_prefix(b_prompt);
  EXPECT_EQ(hit.block_ids, Ids({0, 1}));
  EXPECT_EQ(hit.num_cached_tokens, 8);
  SeqKvState b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(b, 3, hit));
  EXPECT_EQ(table_of(b), Ids({0, 1, 3}));
  EXPECT_EQ(b.num_computed_tokens, 11);
  EXPECT_EQ(b.block_hashes, std::vector<BlockHash>(a.block_hashes.begin(), a.block_hashes.end()));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.pool().ref_count(3), 1);

  const KvCacheStats s = kv.stats();
  EXPECT_EQ(s.num_used_blocks, 4);
  EXPECT_EQ(s.num_free_blocks, 4);
  EXPECT_EQ(s.num_prefix_query_tokens, 21);
  EXPECT_EQ(s.num_prefix_hit_tokens, 8);
  EXPECT_EQ(s.num_allocated_slots, 16);
  EXPECT_EQ(s.num_wasted_slots, 2 + 1);  // block 2 holds 2 of 4, block 3 holds 3 of 4
  EXPECT_FLOAT_EQ(kv.usage(), 0.5f);
}

TEST_F(KvCacheManagerTest, AFullyCachedPromptStillComputesItsLastBlock) {
  KvCacheManager kv(options(8));
  const Tokens prompt = iota_tokens(8, 1);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, prompt));
  kv.cache_full_blocks(a, prompt);
  EXPECT_EQ(table_of(a), Ids({0, 1}));
  // The same 8 tokens again: both blocks are cached, but the last token must be computed for its logits.
  SeqKvState b = kv.make_seq_state();
  const PrefixHit hit = kv.lookup_prefix(prompt);
  EXPECT_EQ(hit.block_ids, Ids({0}));
  ASSERT_TRUE(kv.allocate_slots(b, 4, hit));
  EXPECT_EQ(table_of(b), Ids({0, 2}));
  // Block 2 now holds what block 1 holds; the index keeps block 1, block 2 stays uncached.
  kv.cache_full_blocks(b, prompt);
  EXPECT_TRUE(kv.pool().is_cached(1));
  EXPECT_FALSE(kv.pool().is_cached(2));
  EXPECT_EQ(b.block_hashes, a.block_hashes);
}

TEST_F(KvCacheManagerTest, FreeOrderAndLruReuseAreExact) {
  KvCacheManager kv(options(8));
  const Tokens a_prompt = iota_tokens(10, 1);
  Tokens b_prompt(a_prompt.begin(), a_prompt.begin() + 8);
  b_prompt.insert(b_prompt.end(), {50, 51, 52});
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, a_prompt));
  kv.cache_full_blocks(a, a_prompt);
  ASSERT_TRUE(admit(kv, b, b_prompt));
  kv.cache_full_blocks(b, b_prompt);
  ASSERT_EQ(table_of(b), Ids({0, 1, 3}));

  kv.free(a);  // 2 is uncached: to the front; 1 and 0 are still held by b
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({2, 4, 5, 6, 7}));
  kv.free(b);  // last block first: 3 to the front, then 1 and 0 to the LRU end
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({3, 2, 4, 5, 6, 7, 1, 0}));
  KvCacheStats s = kv.stats();
  EXPECT_EQ(s.num_used_blocks, 0);
  EXPECT_EQ(s.num_free_blocks, 8);
  EXPECT_EQ(s.num_cached_blocks, 2);
  EXPECT_EQ(s.num_wasted_slots, 0);

  // An unrelated prompt takes every uncached block before evicting anything.
  const Tokens d_prompt = iota_tokens(24, 200);
  SeqKvState d = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, d, d_prompt));
  EXPECT_EQ(table_of(d), Ids({3, 2, 4, 5, 6, 7}));
  EXPECT_EQ(kv.lookup_prefix(a_prompt).block_ids, Ids({0, 1}));
  // Then the end of the cached chain goes first, so its start stays findable.
  ASSERT_TRUE(kv.allocate_slots(d, 1));
  EXPECT_EQ(table_of(d), Ids({3, 2, 4, 5, 6, 7, 1}));
  EXPECT_EQ(kv.lookup_prefix(a_prompt).block_ids, Ids({0}));
  ASSERT_TRUE(kv.allocate_slots(d, 4));
  EXPECT_EQ(table_of(d), Ids({3, 2, 4, 5, 6, 7, 1, 0}));
  EXPECT_TRUE(kv.lookup_prefix(a_prompt).empty());
  s = kv.stats();
  EXPECT_EQ(s.num_cached_blocks, 0);
  EXPECT_EQ(s.num_free_blocks, 0);
  EXPECT_EQ(kv.prefix_cache().size(), 0);
  EXPECT_FLOAT_EQ(kv.usage(), 1.0f);
}

TEST_F(KvCacheManagerTest, EvictionTakesTheLeastRecentlyUsedChainFirst) {
  KvCacheManager kv(options(6));
  const Tokens x_prompt = iota_tokens(9, 1), y_prompt = iota_tokens(9, 100);
  SeqKvState x = kv.make_seq_state(), y = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, x, x_prompt));
  kv.cache_full_blocks(x, x_prompt);
  ASSERT_TRUE(admit(kv, y, y_prompt));
  kv.cache_full_blocks(y, y_prompt);
  ASSERT_EQ(table_of(x), Ids({0, 1, 2}));
  ASSERT_EQ(table_of(y), Ids({3, 4, 5}));
  kv.free(x);
  kv.free(y);
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({5, 2, 1, 0, 4, 3}));

  // Using x's prefix again makes it the most recently used chain.
  SeqKvState x2 = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, x2, x_prompt));
  EXPECT_EQ(table_of(x2), Ids({0, 1, 5}));
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({2, 4, 3}));
  kv.free(x2);
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({5, 2, 4, 3, 1, 0}));

  SeqKvState z = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, z, iota_tokens(12, 300)));
  EXPECT_EQ(table_of(z), Ids({5, 2, 4}));
  EXPECT_EQ(kv.lookup_prefix(y_prompt).block_ids, Ids({3}));
  EXPECT_EQ(kv.lookup_prefix(x_prompt).block_ids, Ids({0, 1}));
}

TEST_F(KvCacheManagerTest, ForkSharesBlocksAndTheFirstWriterCopiesThePartialBlock) {
  KvCacheManager kv(options(8));
  const Tokens prompt = iota_tokens(6, 1);
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, prompt));
  kv.cache_full_blocks(a, prompt);
  kv.fork(a, b);
  EXPECT_EQ(table_of(b), Ids({0, 1}));
  EXPECT_EQ(b.num_computed_tokens, 6);
  EXPECT_EQ(b.block_hashes, a.block_hashes);
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.stats().num_used_blocks, 2);  // shared blocks count once
  EXPECT_EQ(kv.stats().num_wasted_slots, 2);

  // The child writes position 6 into shared partial block 1: it gets block 2, a copy of 1.
  ASSERT_TRUE(kv.allocate_slots(b, 1));
  EXPECT_EQ(table_of(b), Ids({0, 2}));
  EXPECT_EQ(copies_of(kv), std::vector<BlockCopy>({{1, 2}}));
  EXPECT_EQ(table_of(a), Ids({0, 1}));  // the parent is untouched
  EXPECT_EQ(a.num_computed_tokens, 6);
  EXPECT_EQ(kv.pool().ref_count(0), 2);  // full blocks stay shared
  EXPECT_EQ(kv.pool().ref_count(1), 1);
  EXPECT_EQ(kv.pool().ref_count(2), 1);
  EXPECT_EQ(kv.stats().num_wasted_slots, 2 + 1);

  // Block 1 is the parent's alone now: it writes in place.
  ASSERT_TRUE(kv.allocate_slots(a, 1));
  EXPECT_EQ(table_of(a), Ids({0, 1}));
  EXPECT_EQ(copies_of(kv).size(), 1u);
  kv.clear_pending_copies();
  // Filling block 2 and starting block 3 needs no copy.
  ASSERT_TRUE(kv.allocate_slots(b, 2));
  EXPECT_EQ(table_of(b), Ids({0, 2, 3}));
  EXPECT_TRUE(kv.pending_copies().empty());
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.stats().num_used_blocks, 0);
}

TEST_F(KvCacheManagerTest, TheParentWritingFirstGetsTheCopy) {
  KvCacheManager kv(options(8));
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state(), c = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 5));
  kv.fork(a, b);
  kv.fork(a, c);
  EXPECT_EQ(kv.pool().ref_count(1), 3);
  ASSERT_TRUE(kv.allocate_slots(a, 1));
  EXPECT_EQ(table_of(a), Ids({0, 2}));
  ASSERT_TRUE(kv.allocate_slots(c, 1));
  EXPECT_EQ(table_of(c), Ids({0, 3}));
  ASSERT_TRUE(kv.allocate_slots(b, 1));  // the last holder of block 1 writes in place
  EXPECT_EQ(table_of(b), Ids({0, 1}));
  EXPECT_EQ(copies_of(kv), std::vector<BlockCopy>({{1, 2}, {1, 3}}));
  EXPECT_EQ(kv.pool().ref_count(0), 3);
}

TEST_F(KvCacheManagerTest, ForkAtABlockBoundaryCopiesNothing) {
  KvCacheManager kv(options(8));
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  kv.fork(a, b);
  ASSERT_TRUE(kv.allocate_slots(b, 1));
  ASSERT_TRUE(kv.allocate_slots(a, 1));
  EXPECT_EQ(table_of(b), Ids({0, 1, 2}));
  EXPECT_EQ(table_of(a), Ids({0, 1, 3}));
  EXPECT_TRUE(kv.pending_copies().empty());
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
}

TEST_F(KvCacheManagerTest, OutOfBlocksReturnsFalseAndChangesNothing) {
  KvCacheManager kv(options(4));
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 10));  // [0, 1, 2]
  {
    const Snapshot before(kv, b);
    EXPECT_FALSE(kv.allocate_slots(b, 5));
    before.expect_same(kv, b);
  }
  ASSERT_TRUE(kv.allocate_slots(a, 3));  // 13 tokens: [0, 1, 2, 3]
  EXPECT_EQ(kv.stats().num_free_blocks, 0);
  {
    const Snapshot before(kv, a);
    EXPECT_FALSE(kv.allocate_slots(a, 4));
    before.expect_same(kv, a);
  }
  // A copy-on-write needs a block too.
  SeqKvState c = kv.make_seq_state();
  kv.fork(a, c);
  {
    const Snapshot before(kv, c);
    EXPECT_FALSE(kv.allocate_slots(c, 1));
    before.expect_same(kv, c);
    EXPECT_TRUE(kv.pending_copies().empty());
  }
  // Zero new tokens always fit.
  EXPECT_TRUE(kv.allocate_slots(c, 0));
}

TEST_F(KvCacheManagerTest, RevivedHitBlocksAreNotCountedAsFree) {
  KvCacheManager kv(options(4));
  const Tokens prompt = iota_tokens(9, 1);
  SeqKvState x = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, x, prompt));
  kv.cache_full_blocks(x, prompt);
  kv.free(x);
  ASSERT_EQ(kv.pool().free_blocks_in_order(), Ids({2, 3, 1, 0}));
  // 4 free blocks, but the hit takes 2 of them: 17 tokens need 3 more, and only 2 remain.
  const PrefixHit hit = kv.lookup_prefix(prompt);
  ASSERT_EQ(hit.block_ids, Ids({0, 1}));
  SeqKvState x2 = kv.make_seq_state();
  {
    const Snapshot before(kv, x2);
    EXPECT_FALSE(kv.allocate_slots(x2, 9, hit));
    before.expect_same(kv, x2);
  }
  ASSERT_TRUE(kv.allocate_slots(x2, 8, hit));
  EXPECT_EQ(table_of(x2), Ids({0, 1, 2, 3}));
  EXPECT_EQ(x2.num_computed_tokens, 16);
}

TEST_F(KvCacheManagerTest, WithoutPrefixCacheNothingIsShared) {
  KvCacheManager kv(options(8, false));
  EXPECT_FALSE(kv.prefix_cache_enabled());
  const Tokens prompt = iota_tokens(10, 1);
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, prompt));
  kv.cache_full_blocks(a, prompt);
  EXPECT_TRUE(a.block_hashes.empty());
  EXPECT_FALSE(kv.pool().is_cached(0));
  EXPECT_TRUE(kv.lookup_prefix(prompt).empty());
  ASSERT_TRUE(admit(kv, b, prompt));
  EXPECT_EQ(table_of(b), Ids({3, 4, 5}));
  kv.free(a);
  kv.free(b);
  EXPECT_EQ(kv.stats().num_cached_blocks, 0);
  EXPECT_EQ(kv.stats().num_prefix_query_tokens, 0);
  EXPECT_EQ(kv.pool().free_blocks_in_order(), Ids({3, 4, 5, 0, 1, 2, 6, 7}));
}

TEST_F(KvCacheManagerTest, ExtraKeySeparatesCaches) {
  KvCacheManager::Options o = options(8);
  KvCacheManager kv0(o);
  o.extra_key = 1;
  KvCacheManager kv1(o);
  const Tokens prompt = iota_tokens(9, 1);
  SeqKvState a = kv0.make_seq_state(), b = kv1.make_seq_state();
  ASSERT_TRUE(admit(kv0, a, prompt));
  ASSERT_TRUE(admit(kv1, b, prompt));
  kv0.cache_full_blocks(a, prompt);
  kv1.cache_full_blocks(b, prompt);
  ASSERT_EQ(a.block_hashes.size(), 2u);
  EXPECT_NE(a.block_hashes[0], b.block_hashes[0]);
  EXPECT_NE(a.block_hashes[1], b.block_hashes[1]);
}

TEST_F(KvCacheManagerTest, DecodeCachesBlocksAsTheyFill) {
  KvCacheManager kv(options(8));
  Tokens tokens = iota_tokens(3, 1);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, tokens));
  for (TokenId next = 10; next < 16; ++next) {
    tokens.push_back(next);
    ASSERT_TRUE(kv.allocate_slots(a, 1));
    kv.cache_full_blocks(a, tokens);
    EXPECT_EQ(int32_t(a.block_hashes.size()), a.num_computed_tokens / 4);
  }
  EXPECT_EQ(table_of(a), Ids({0, 1, 2}));
  EXPECT_EQ(a.num_computed_tokens, 9);
  EXPECT_EQ(kv.stats().num_wasted_slots, 3);
  tokens.push_back(99);
  EXPECT_EQ(kv.lookup_prefix(tokens).block_ids, Ids({0, 1}));
}

TEST_F(KvCacheManagerTest, AMissIsCountedAsAQuery) {
  KvCacheManager kv(options(8));
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, iota_tokens(7, 1)));
  EXPECT_EQ(kv.stats().num_prefix_query_tokens, 7);
  EXPECT_EQ(kv.stats().num_prefix_hit_tokens, 0);
}

TEST_F(KvCacheManagerTest, StaleHitIsABug) {
  KvCacheManager kv(options(3));
  const Tokens prompt = iota_tokens(5, 1);
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state(), c = kv.make_seq_state();
  ASSERT_TRUE(admit(kv, a, prompt));
  kv.cache_full_blocks(a, prompt);
  kv.free(a);
  const PrefixHit hit = kv.lookup_prefix(prompt);
  ASSERT_EQ(hit.block_ids, Ids({0}));
  ASSERT_TRUE(kv.allocate_slots(b, 12));  // evicts block 0
  EXPECT_DEATH((void)kv.allocate_slots(c, 1, hit), "stale PrefixHit");
}

}  // namespace
}  // namespace pagoda
