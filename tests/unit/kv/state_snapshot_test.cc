// Tests for a hybrid model's prefix cache: StateSnapshotCache (kv/state_snapshot_cache.h: slots by hash, LRU,
// dropped on request) and KvCacheManager with Options::num_state_snapshots: a state saved only at a hashed block
// boundary, into a snapshot slot after the sequences'; a lookup cut to the deepest block with a snapshot (none: no
// hit); admitting the hit queues the snapshot's copy into the sequence's slot; a block's eviction drops its
// snapshot; a failed step's discarded copies drop every snapshot. With Options::state_backups (speculative decoding):
// a backup before a verification, and a roll back that drops drafts restores it and goes back to its position.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/state_snapshot_cache.h"

namespace pagoda {
namespace {

TEST(StateSnapshotCacheTest, FindsWhatItHoldsAndEvictsTheLeastRecentlyUsed) {
  StateSnapshotCache cache(5, 2);  // storage slots 5 and 6
  EXPECT_EQ(cache.capacity(), 2);
  EXPECT_FALSE(cache.find(11));
  const int32_t a = cache.insert(11), b = cache.insert(22);
  EXPECT_NE(a, b);
  EXPECT_TRUE(a == 5 || a == 6);
  EXPECT_TRUE(b == 5 || b == 6);
  EXPECT_EQ(cache.find(11), a);
  EXPECT_EQ(cache.size(), 2);
  cache.touch(11);                   // 22 is now the least recently used
  EXPECT_EQ(cache.insert(33), b);    // takes 22's slot
  EXPECT_FALSE(cache.find(22));
  EXPECT_EQ(cache.find(11), a);
  EXPECT_EQ(cache.num_evictions(), 1);
  cache.erase(11);
  cache.erase(99);  // not held: nothing
  EXPECT_EQ(cache.size(), 1);
  EXPECT_EQ(cache.insert(44), a);  // the free slot first
  EXPECT_EQ(cache.num_evictions(), 1);
  cache.clear();
  EXPECT_EQ(cache.size(), 0);
  EXPECT_FALSE(cache.find(33));
  EXPECT_DEATH(cache.touch(33), "not held");
}

KvCacheManager::Options snapshot_options(int32_t num_blocks, int32_t num_state_slots, int32_t num_snapshots) {
  KvCacheManager::Options o;
  o.num_blocks = num_blocks;
  o.block_size = 4;
  o.enable_prefix_cache = true;
  o.num_state_slots = num_state_slots;
  o.num_state_snapshots = num_snapshots;
  return o;
}

std::vector<TokenId> tokens(int32_t n, TokenId first = 1) {
  std::vector<TokenId> t(static_cast<size_t>(n));
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvCacheManagerSnapshotTest, AHitRestoresTheSnapshotOfItsLastBlock) {
  KvCacheManager kv(snapshot_options(16, 2, 3));
  EXPECT_TRUE(kv.prefix_cache_enabled());
  EXPECT_EQ(kv.num_state_storage_slots(), 5);
  const std::vector<TokenId> prompt = tokens(10);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 6, kv.lookup_prefix(prompt)));
  kv.cache_full_blocks(a, prompt);
  EXPECT_FALSE(kv.save_state_snapshot(a));  // 6 tokens: not at a block boundary
  ASSERT_TRUE(kv.allocate_slots(a, 2));
  kv.cache_full_blocks(a, prompt);
  kv.clear_pending_copies();
  ASSERT_TRUE(kv.save_state_snapshot(a));  // 8 tokens, 2 hashed blocks
  ASSERT_EQ(kv.pending_state_copies().size(), 1u);
  const KvCacheManager::StateCopy save = kv.pending_state_copies()[0];
  EXPECT_EQ(save.src_slot, a.state_slot);
  EXPECT_GE(save.dst_slot, 2);  // a snapshot slot, after the sequences'
  EXPECT_FALSE(kv.save_state_snapshot(a));  // held already: only marked used
  EXPECT_EQ(kv.pending_state_copies().size(), 1u);
  kv.clear_pending_copies();

  // Another prompt sharing 9 tokens: two blocks cached, the state after them restored.
  std::vector<TokenId> other = tokens(9);
  other.push_back(77);
  other.push_back(78);
  const PrefixHit hit = kv.lookup_prefix(other);
  EXPECT_EQ(hit.num_cached_tokens, 8);
  EXPECT_EQ(hit.state_snapshot_slot, save.dst_slot);
  SeqKvState b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(b, 3, hit));
  EXPECT_EQ(b.num_computed_tokens, 11);
  ASSERT_EQ(kv.pending_state_copies().size(), 1u);
  EXPECT_EQ(kv.pending_state_copies()[0].src_slot, save.dst_slot);
  EXPECT_EQ(kv.pending_state_copies()[0].dst_slot, b.state_slot);
  EXPECT_EQ(kv.stats().num_prefix_hit_tokens, 8);
  kv.free(a);
  kv.free(b);
}

TEST(KvCacheManagerSnapshotTest, AHitIsCutToTheDeepestBlockWithASnapshot) {
  KvCacheManager kv(snapshot_options(16, 2, 3));
  const std::vector<TokenId> prompt = tokens(13);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 4, kv.lookup_prefix(prompt)));
  kv.cache_full_blocks(a, prompt);
  ASSERT_TRUE(kv.save_state_snapshot(a));  // after block 0
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  kv.cache_full_blocks(a, prompt);  // blocks 1 and 2 cached, no snapshot after them
  const PrefixHit hit = kv.lookup_prefix(prompt);
  EXPECT_EQ(hit.block_ids.size(), 1u);
  EXPECT_EQ(hit.num_cached_tokens, 4);
  EXPECT_EQ(hit.num_chain_tokens, 12);  // the chain the scheduler may stop a chunk at, to snapshot it
  EXPECT_GE(hit.state_snapshot_slot, 2);
  kv.free(a);

  // Without any snapshot a cached chain gives no hit.
  KvCacheManager bare(snapshot_options(16, 2, 3));
  SeqKvState c = bare.make_seq_state();
  ASSERT_TRUE(bare.allocate_slots(c, 12, bare.lookup_prefix(prompt)));
  bare.cache_full_blocks(c, prompt);
  EXPECT_EQ(bare.pool().num_used(), 3);
  const PrefixHit none = bare.lookup_prefix(prompt);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.state_snapshot_slot, -1);
  EXPECT_EQ(none.num_chain_tokens, 12);
  bare.free(c);
}

TEST(KvCacheManagerSnapshotTest, EvictingABlockDropsItsSnapshot) {
  KvCacheManager kv(snapshot_options(3, 2, 2));
  const std::vector<TokenId> prompt = tokens(9);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 4, kv.lookup_prefix(prompt)));
  kv.cache_full_blocks(a, prompt);
  ASSERT_TRUE(kv.save_state_snapshot(a));
  kv.free(a);
  EXPECT_EQ(kv.state_snapshots().size(), 1);
  // A new sequence takes every block, the cached one last: its snapshot goes with it.
  SeqKvState b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(b, 8));
  EXPECT_EQ(kv.state_snapshots().size(), 1);
  ASSERT_TRUE(kv.allocate_slots(b, 4));
  EXPECT_EQ(kv.state_snapshots().size(), 0);
  EXPECT_TRUE(kv.lookup_prefix(prompt).empty());
  kv.free(b);
}

TEST(KvCacheManagerSnapshotTest, DiscardedCopiesDropEverySnapshot) {
  KvCacheManager kv(snapshot_options(16, 2, 2));
  const std::vector<TokenId> prompt = tokens(9);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 8, kv.lookup_prefix(prompt)));
  kv.cache_full_blocks(a, prompt);
  ASSERT_TRUE(kv.save_state_snapshot(a));
  kv.discard_pending_copies();
  EXPECT_TRUE(kv.pending_state_copies().empty());
  EXPECT_EQ(kv.state_snapshots().size(), 0);
  EXPECT_TRUE(kv.lookup_prefix(prompt).empty());
  kv.free(a);
}

TEST(KvCacheManagerSnapshotTest, NoSnapshotsNoPrefixCache) {
  KvCacheManager kv(snapshot_options(16, 2, 0));
  EXPECT_FALSE(kv.prefix_cache_enabled());
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 8));
  EXPECT_FALSE(kv.save_state_snapshot(a));
  kv.free(a);
}

TEST(KvCacheManagerSnapshotTest, ARollBackRestoresTheBackupAndGoesBackToIt) {
  KvCacheManager::Options o = snapshot_options(16, 2, 0);
  o.state_backups = true;
  KvCacheManager kv(o);
  EXPECT_EQ(kv.num_state_storage_slots(), 4);  // 2 sequences' and their 2 backups
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 6));
  kv.clear_pending_copies();
  // A verification of the token at 6 and 3 drafts: the state covering 6 positions is backed up first.
  ASSERT_TRUE(kv.allocate_slots(a, 4));
  kv.back_up_state(a, 6);
  ASSERT_EQ(kv.pending_state_copies().size(), 1u);
  const KvCacheManager::StateCopy backup = kv.pending_state_copies()[0];
  EXPECT_EQ(backup.src_slot, a.state_slot);
  EXPECT_EQ(backup.dst_slot, 2 + a.state_slot);
  kv.clear_pending_copies();
  // One draft accepted: 8 positions to keep, but the state holds 10: back to 6, the backup restored.
  kv.roll_back(a, 8);
  EXPECT_EQ(a.num_computed_tokens, 6);
  EXPECT_EQ(a.block_table.num_blocks(), 2);
  ASSERT_EQ(kv.pending_state_copies().size(), 1u);
  EXPECT_EQ(kv.pending_state_copies()[0].src_slot, backup.dst_slot);
  EXPECT_EQ(kv.pending_state_copies()[0].dst_slot, a.state_slot);
  EXPECT_EQ(a.state_backup_pos, -1);
  kv.clear_pending_copies();
  // Every draft accepted: nothing to restore.
  ASSERT_TRUE(kv.allocate_slots(a, 3));
  kv.back_up_state(a, 6);
  kv.clear_pending_copies();
  kv.roll_back(a, 9);
  EXPECT_EQ(a.num_computed_tokens, 9);
  EXPECT_TRUE(kv.pending_state_copies().empty());
  // Without a backup a state cannot go back.
  ASSERT_TRUE(kv.allocate_slots(a, 2));
  EXPECT_DEATH(kv.roll_back(a, 10), "without a backup");
  kv.free(a);
}

}  // namespace
}  // namespace pagoda
