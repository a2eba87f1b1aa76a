// KvCacheManager: the scheduler's only KV API. Owns the BlockPool and the PrefixCache and keeps every
// SeqKvState it is handed in step with them. Invariants: a block's ref count equals the number of block tables
// holding it; a block is written only while exactly one table holds it (a shared partial block is copied
// first, and the copy is queued in pending_copies() for KvStorage); only full blocks are ever cached, and a
// cached block is never written again. Running out of blocks is a `false`, never an abort, and changes nothing.
// A hybrid model's manager also hands each sequence a recurrent-state slot (Options::num_state_slots) with its first
// allocation, takes it back in free(), and gives a fork's child a slot of its own with a copy of the parent's state
// queued (pending_state_copies()). Its prefix cache needs the state after a hit's last block too: with
// Options::num_state_snapshots it keeps copies of states at block boundaries (save_state_snapshot, kv/state_snapshot_cache.h),
// dropped with their block's eviction or LRU; a hit is cut to the deepest block with one, and admitting it queues
// the copy of that snapshot into the sequence's slot. Without snapshots its prefix cache is off. With
// Options::state_backups it rolls a sequence back too: back_up_state keeps the state before a verification, and a
// roll back that drops drafts restores it and goes back to that position, so the accepted tokens are computed again.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "kv/block_copy.h"
#include "kv/block_pool.h"
#include "kv/kv_cache_stats.h"
#include "kv/prefix_cache.h"
#include "kv/prefix_hit.h"
#include "kv/seq_kv_state.h"
#include "kv/state_slot_pool.h"
#include "kv/state_snapshot_cache.h"

namespace pagoda {

class KvCacheManager {
 public:
  struct Options {
    int32_t num_blocks = 0;
    int32_t block_size = 16;          // tokens per block (kv_cache.block_size)
    bool enable_prefix_cache = true;  // false: --no-prefix-cache
    uint64_t extra_key = 0;           // mixed into every block hash: whatever else decides K/V (model id)
    // Recurrent-state slots (a hybrid model's); 0: none.
    int32_t num_state_slots = 0;
    // With state slots: snapshots of states at block boundaries kept for the prefix cache, in StateStorage's slots
    // after the sequences' ([num_state_slots, num_state_slots + num_state_snapshots)). 0: the prefix cache is off
    // for this model whatever enable_prefix_cache says.
    int32_t num_state_snapshots = 0;
    // With state slots: a backup slot per sequence slot (after the snapshots), for speculative decoding's roll back.
    bool state_backups = false;
  };
  // A state slot's copy (a fork's, a snapshot saved or restored): StateStorage must perform it before the next
  // forward step, in order.
  struct StateCopy {
    int32_t src_slot = -1;
    int32_t dst_slot = -1;
  };

  explicit KvCacheManager(const Options& options);
  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  int32_t block_size() const { return block_size_; }
  bool prefix_cache_enabled() const { return enable_prefix_cache_; }
  // A fresh per-sequence state for this manager's block size.
  SeqKvState make_seq_state() const { return SeqKvState(block_size_); }

  // The cached full blocks that start `prompt`, never the last token's block (see PrefixCache::lookup). Empty
  // when prefix caching is off. Pass the hit to allocate_slots before anything else changes the pool.
  PrefixHit lookup_prefix(std::span<const TokenId> prompt) const;

  // Gives `seq` slots for positions [num_computed_tokens, num_computed_tokens + num_new_tokens) and advances
  // num_computed_tokens past them: call it for each sequence a step schedules. A shared partial last block is
  // replaced by a private one first and the copy queued. A sequence without a state slot takes one when the
  // manager has them. False: not enough free blocks (or no free state slot); nothing changed, and the caller
  // preempts or waits.
  bool allocate_slots(SeqKvState& seq, int32_t num_new_tokens);
  // Admission of an empty `seq` with a prefix hit: takes the hit's blocks (num_computed_tokens starts at
  // hit.num_cached_tokens), then allocates as above. Counts the hit in the prefix-cache figures on success.
  bool allocate_slots(SeqKvState& seq, int32_t num_new_tokens, const PrefixHit& hit);

  // `child` (empty) shares every block of `parent`; the first write into their shared partial block, by either
  // one, copies it (copy-on-write). Full blocks stay shared for good. With state slots the child takes a free one
  // (there must be one: the engine sizes the pool for a step's sequences and one parent) and the copy of the
  // parent's state is queued.
  void fork(const SeqKvState& parent, SeqKvState& child);

  // Indexes the blocks of `seq` that became full, so later prompts can reuse them. `all_tokens` are the
  // sequence's tokens (at least num_computed_tokens). Call it only once the step that wrote them has run.
  void cache_full_blocks(SeqKvState& seq, std::span<const TokenId> all_tokens);

  // A hybrid model's prefix cache: keeps a copy of `seq`'s state, which must cover exactly its
  // num_computed_tokens (call it once the step that computed them has run), under the hash of its last full block.
  // Only at a block boundary whose block is hashed, and only with snapshots; a snapshot already held under that
  // hash is only marked used. True when a copy was queued.
  bool save_state_snapshot(const SeqKvState& seq);
  // After a step that failed: the copies it did not perform are dropped, and with them every snapshot (one whose
  // save was dropped would hold garbage).
  void discard_pending_copies();

  // Speculative decoding on a hybrid model: queues the copy of `seq`'s state into its backup slot (performed before
  // the step's forward, when the state covers `covered_tokens`, the positions computed before the step) and notes
  // that position. Call it when a step verifies drafts for `seq`; needs Options::state_backups.
  void back_up_state(SeqKvState& seq, int32_t covered_tokens);

  // Speculative decoding's rollback: `seq` keeps only its first `num_tokens` computed positions (at most
  // num_computed_tokens, and never fewer than its hashed full blocks hold: a cached block is never rolled back).
  // Blocks past them are released (they were allocated for rejected drafts, so nothing else holds them); what
  // the kept last block held past `num_tokens` is garbage that later steps overwrite. With a state slot, a recurrent
  // state cannot be cut: unless every computed position is kept, `seq` goes back to its backup's position (at most
  // num_tokens; a backup must be held, checked) and the backup's copy into its slot is queued, so the positions
  // from there to num_tokens are computed again. The backup is released either way.
  void roll_back(SeqKvState& seq, int32_t num_tokens);

  // Releases every block of `seq` (last block first, so a cached chain is evicted from its end) and empties it.
  void free(SeqKvState& seq);

  // The block copies decided since the last clear, in order. KvStorage must perform them, in this order,
  // before the next forward step.
  std::span<const BlockCopy> pending_copies() const { return pending_copies_; }
  void clear_pending_copies() {
    pending_copies_.clear();
    pending_state_copies_.clear();
  }
  // The state copies of forks since the last clear, in order; StateStorage performs them with the block copies.
  std::span<const StateCopy> pending_state_copies() const { return pending_state_copies_; }
  bool has_state_slots() const { return state_slots_.num_total() > 0; }
  const StateSlotPool& state_slots() const { return state_slots_; }
  const StateSnapshotCache& state_snapshots() const { return state_snapshots_; }
  // StateStorage's slots for this manager: the sequences' and then the snapshots'.
  int32_t num_state_storage_slots() const {
    return state_slots_.num_total() + state_snapshots_.capacity() + (state_backups_ ? state_slots_.num_total() : 0);
  }

  float usage() const { return float(pool_.num_used()) / float(pool_.num_total()); }  // used / total blocks
  KvCacheStats stats() const;
  const BlockPool& pool() const { return pool_; }
  const PrefixCache& prefix_cache() const { return prefix_cache_; }

 private:
  bool allocate_slots_impl(SeqKvState& seq, int32_t num_new_tokens, const PrefixHit* hit);
  BlockId take_fresh_block();
  void retain_block(BlockId block_id);
  void release_block(BlockId block_id);
  void set_fill(BlockId block_id, int32_t num_filled);  // for a used block

  int32_t block_size_;
  bool enable_prefix_cache_;
  uint64_t extra_key_;
  PrefixCache prefix_cache_;
  BlockPool pool_;
  std::vector<BlockCopy> pending_copies_;
  StateSlotPool state_slots_;
  StateSnapshotCache state_snapshots_;
  bool state_backups_;
  std::vector<StateCopy> pending_state_copies_;
  // Tokens held by each block; a used block's count is part of num_filled_slots_, so wasted slots are O(1).
  std::vector<int32_t> block_fills_;  // [num_blocks]
  int64_t num_filled_slots_ = 0;      // sum of block_fills_ over used blocks
  int64_t num_prefix_query_tokens_ = 0;
  int64_t num_prefix_hit_tokens_ = 0;
};

}  // namespace pagoda
