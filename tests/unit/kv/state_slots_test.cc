// Tests for the recurrent-state slots of a hybrid model: StateSlotPool (kv/state_slot_pool.h), StateStorage
// (kv/state_storage.h) and KvCacheManager with Options::num_state_slots: a slot with a sequence's first allocation,
// none taken twice, back with free(); running out is a `false` that changes nothing; a fork gives the child its own
// slot and queues the copy of the parent's state; without state snapshots the prefix cache is off (with them:
// state_snapshot_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "kv/state_slot_pool.h"
#include "kv/state_storage.h"

namespace pagoda {
namespace {

TEST(StateSlotPoolTest, HandsOutEachSlotOnceAndTakesThemBack) {
  StateSlotPool pool(3);
  EXPECT_EQ(pool.num_total(), 3);
  std::vector<int32_t> got;
  for (int i = 0; i < 3; ++i) {
    std::optional<int32_t> s = pool.allocate();
    ASSERT_TRUE(s);
    got.push_back(*s);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FALSE(pool.allocate());
  EXPECT_EQ(pool.num_free(), 0);
  pool.release(1);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.allocate(), std::optional<int32_t>(1));
  EXPECT_DEATH(pool.release(7), "release of state slot 7");
}

TEST(StateStorageTest, SlotsAreZeroAtFirstAndCopiesAreWhole) {
  StateStorage storage(5, 3);
  EXPECT_EQ(storage.bytes_per_slot(), 20);
  EXPECT_EQ(storage.total_bytes(), 60);
  const RecurrentStateView v = storage.view();
  for (int32_t s = 0; s < 3; ++s)
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(v.slot(s)[i], 0.0f);
  std::iota(v.slot(0), v.slot(0) + 5, 1.0f);
  storage.copy_slot(0, 2);
  EXPECT_EQ(std::vector<float>(v.slot(2), v.slot(2) + 5), (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(v.slot(1)[0], 0.0f);
  EXPECT_EQ(StateStorage().view().num_slots, 0);
}

KvCacheManager::Options hybrid_options(int32_t num_blocks, int32_t num_state_slots) {
  KvCacheManager::Options o;
  o.num_blocks = num_blocks;
  o.block_size = 4;
  o.enable_prefix_cache = true;  // asked for, but a manager with state slots serves no hits
  o.num_state_slots = num_state_slots;
  return o;
}

TEST(KvCacheManagerStateTest, ASequenceHoldsOneSlotFromItsFirstAllocationToFree) {
  KvCacheManager kv(hybrid_options(16, 2));
  EXPECT_TRUE(kv.has_state_slots());
  EXPECT_FALSE(kv.prefix_cache_enabled());
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state(), c = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 6));
  const int32_t slot_a = a.state_slot;
  EXPECT_GE(slot_a, 0);
  ASSERT_TRUE(kv.allocate_slots(a, 1));  // a later step keeps it
  EXPECT_EQ(a.state_slot, slot_a);
  ASSERT_TRUE(kv.allocate_slots(b, 3));
  EXPECT_NE(b.state_slot, slot_a);
  // No slot left: false, and nothing changed (no block taken, no slot).
  const int32_t free_blocks = kv.pool().num_free();
  EXPECT_FALSE(kv.allocate_slots(c, 2));
  EXPECT_EQ(c.state_slot, -1);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(kv.pool().num_free(), free_blocks);
  kv.free(a);
  EXPECT_EQ(a.state_slot, -1);
  EXPECT_EQ(kv.state_slots().num_free(), 1);
  ASSERT_TRUE(kv.allocate_slots(c, 2));
  EXPECT_EQ(c.state_slot, slot_a);
  kv.free(b);
  kv.free(c);
  EXPECT_EQ(kv.state_slots().num_free(), 2);
  EXPECT_EQ(kv.pool().num_used(), 0);
}

TEST(KvCacheManagerStateTest, AForkGetsItsOwnSlotWithTheParentsStateQueued) {
  KvCacheManager kv(hybrid_options(16, 3));
  SeqKvState parent = kv.make_seq_state(), child1 = kv.make_seq_state(), child2 = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(parent, 6));
  kv.clear_pending_copies();
  kv.fork(parent, child1);
  kv.fork(parent, child2);
  ASSERT_EQ(kv.pending_state_copies().size(), 2u);
  EXPECT_EQ(kv.pending_state_copies()[0].src_slot, parent.state_slot);
  EXPECT_EQ(kv.pending_state_copies()[0].dst_slot, child1.state_slot);
  EXPECT_EQ(kv.pending_state_copies()[1].dst_slot, child2.state_slot);
  EXPECT_NE(child1.state_slot, child2.state_slot);
  EXPECT_NE(child1.state_slot, parent.state_slot);
  EXPECT_EQ(child1.num_computed_tokens, 6);
  kv.clear_pending_copies();
  EXPECT_TRUE(kv.pending_state_copies().empty());
  kv.free(parent);
  kv.free(child1);
  kv.free(child2);
  EXPECT_EQ(kv.state_slots().num_free(), 3);
}

TEST(KvCacheManagerStateTest, NoPrefixHitsAndNoRollBack) {
  KvCacheManager kv(hybrid_options(16, 2));
  std::vector<TokenId> prompt(12);
  std::iota(prompt.begin(), prompt.end(), 1);
  SeqKvState a = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 12, kv.lookup_prefix(prompt)));
  kv.cache_full_blocks(a, prompt);
  EXPECT_EQ(kv.lookup_prefix(prompt).num_cached_tokens, 0);
  EXPECT_DEATH(kv.roll_back(a, 8), "recurrent state cannot be rolled back");  // no backup (state_backup_pos)
  kv.roll_back(a, 12);  // keeping every token is no roll back
  kv.free(a);
}

TEST(KvCacheManagerStateTest, WithoutStateSlotsNothingChanges) {
  KvCacheManager::Options o = hybrid_options(16, 0);
  KvCacheManager kv(o);
  EXPECT_FALSE(kv.has_state_slots());
  EXPECT_TRUE(kv.prefix_cache_enabled());
  SeqKvState a = kv.make_seq_state(), b = kv.make_seq_state();
  ASSERT_TRUE(kv.allocate_slots(a, 5));
  EXPECT_EQ(a.state_slot, -1);
  kv.fork(a, b);
  EXPECT_EQ(b.state_slot, -1);
  EXPECT_TRUE(kv.pending_state_copies().empty());
  kv.free(a);
  kv.free(b);
}

}  // namespace
}  // namespace pagoda
