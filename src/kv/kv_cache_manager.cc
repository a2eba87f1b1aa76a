// KvCacheManager: allocation with prefix hits and copy-on-write, and the fill count behind wasted slots.
#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <optional>

#include "core/check.h"

namespace pagoda {

KvCacheManager::KvCacheManager(const Options& options)
    : block_size_(options.block_size),
      enable_prefix_cache_(options.enable_prefix_cache &&
                           (options.num_state_slots == 0 || options.num_state_snapshots > 0)),
      extra_key_(options.extra_key),
      prefix_cache_(options.num_blocks),
      pool_(options.num_blocks, enable_prefix_cache_ ? &prefix_cache_ : nullptr),
      state_slots_(options.num_state_slots),
      state_snapshots_(options.num_state_slots, options.num_state_slots > 0 ? options.num_state_snapshots : 0),
      state_backups_(options.state_backups && options.num_state_slots > 0),
      block_fills_(size_t(options.num_blocks), 0) {
  PAGODA_CHECK(options.block_size > 0, "block size must be positive, got {}", options.block_size);
  // Each copy's destination is a block taken from the pool, so between per-step clears there are at most
  // num_blocks of them: queuing one never allocates.
  pending_copies_.reserve(size_t(options.num_blocks));
  // Per step and sequence slot at most a fork's copy, a restore, a save and a backup.
  pending_state_copies_.reserve(4 * size_t(options.num_state_slots));
}

PrefixHit KvCacheManager::lookup_prefix(std::span<const TokenId> prompt) const {
  if (!enable_prefix_cache_) {
    PrefixHit miss;
    miss.num_prompt_tokens = int32_t(prompt.size());
    return miss;
  }
  PrefixHit hit = prefix_cache_.lookup(prompt, block_size_, extra_key_);
  if (!has_state_slots()) return hit;
  hit.num_chain_tokens = hit.num_cached_tokens;
  // The recurrent layers must start from the state after the hit's last block: keep the deepest block with a
  // snapshot.
  size_t num_kept = hit.block_hashes.size();
  for (; num_kept > 0; --num_kept) {
    if (const std::optional<int32_t> slot = state_snapshots_.find(hit.block_hashes[num_kept - 1])) {
      hit.state_snapshot_slot = *slot;
      break;
    }
  }
  hit.block_ids.resize(num_kept);
  hit.block_hashes.resize(num_kept);
  hit.num_cached_tokens = int32_t(num_kept) * block_size_;
  return hit;
}

void KvCacheManager::set_fill(BlockId block_id, int32_t num_filled) {
  num_filled_slots_ += num_filled - block_fills_[size_t(block_id)];
  block_fills_[size_t(block_id)] = num_filled;
}

void KvCacheManager::retain_block(BlockId block_id) {
  // A revived block becomes used again, with the tokens it still holds.
  if (pool_.ref_count(block_id) == 0) num_filled_slots_ += block_fills_[size_t(block_id)];
  pool_.retain(block_id);
}

BlockId KvCacheManager::take_fresh_block() {
  // Evicting a cached block makes every chain through it unreachable, so a snapshot under its hash is dropped.
  if (state_snapshots_.size() > 0)
    if (const std::optional<BlockId> next = pool_.next_free())
      if (const std::optional<BlockHash> evicted = pool_.block_hash(*next)) state_snapshots_.erase(*evicted);
  const std::optional<BlockId> block_id = pool_.allocate_one();
  PAGODA_CHECK(block_id, "the pool ran dry after allocate_slots counted enough free blocks");
  // A free block's old count left num_filled_slots_ when it was freed; whatever it held is garbage now.
  block_fills_[size_t(*block_id)] = 0;
  return *block_id;
}

void KvCacheManager::release_block(BlockId block_id) {
  pool_.release(block_id);
  if (pool_.ref_count(block_id) == 0) num_filled_slots_ -= block_fills_[size_t(block_id)];
}

bool KvCacheManager::allocate_slots(SeqKvState& seq, int32_t num_new_tokens) {
  return allocate_slots_impl(seq, num_new_tokens, nullptr);
}

bool KvCacheManager::allocate_slots(SeqKvState& seq, int32_t num_new_tokens, const PrefixHit& hit) {
  return allocate_slots_impl(seq, num_new_tokens, &hit);
}

bool KvCacheManager::allocate_slots_impl(SeqKvState& seq, int32_t num_new_tokens, const PrefixHit* hit) {
  PAGODA_CHECK(num_new_tokens >= 0, "num_new_tokens = {}", num_new_tokens);
  BlockTable& table = seq.block_table;
  PAGODA_CHECK(table.block_size() == block_size_, "sequence state has block size {}, the pool {}", table.block_size(),
               block_size_);
  const bool use_hit = hit != nullptr && !hit->empty();
  int32_t num_hit_blocks = 0;
  int32_t num_revived = 0;  // hit blocks that are free now and stop being allocatable once taken
  if (hit != nullptr) PAGODA_CHECK(seq.empty(), "a prefix hit is for admitting an empty sequence");
  if (use_hit) {
    PAGODA_CHECK(hit->block_hashes.size() == hit->block_ids.size() &&
                 hit->num_cached_tokens == int32_t(hit->block_ids.size()) * block_size_);
    num_hit_blocks = int32_t(hit->block_ids.size());
    for (int32_t i = 0; i < num_hit_blocks; ++i) {
      const BlockId block_id = hit->block_ids[size_t(i)];
      PAGODA_CHECK(pool_.block_hash(block_id) == hit->block_hashes[size_t(i)],
                   "stale PrefixHit: block {} was evicted since the lookup; call lookup_prefix right before "
                   "allocate_slots",
                   block_id);
      if (pool_.ref_count(block_id) == 0) ++num_revived;
    }
    if (has_state_slots())
      PAGODA_CHECK(hit->state_snapshot_slot >= 0 &&
                       state_snapshots_.find(hit->block_hashes.back()) == hit->state_snapshot_slot,
                   "stale PrefixHit: the state snapshot of its last block was dropped since the lookup");
  }
  const int32_t first_pos = use_hit ? hit->num_cached_tokens : seq.num_computed_tokens;
  const int32_t end_pos = first_pos + num_new_tokens;
  const int32_t num_have = use_hit ? num_hit_blocks : table.num_blocks();
  const int32_t num_fresh = std::max(0, table.num_blocks_for(end_pos) - num_have);
  // Writing into a partial last block that another table shares needs a private copy of it first.
  const bool copy_on_write = !use_hit && num_new_tokens > 0 && first_pos % block_size_ != 0 &&
                             pool_.ref_count(table.block_id(table.num_blocks() - 1)) > 1;
  if (num_fresh + (copy_on_write ? 1 : 0) > pool_.num_free() - num_revived) return false;
  const bool needs_state_slot = has_state_slots() && seq.state_slot < 0;
  if (needs_state_slot && state_slots_.num_free() == 0) return false;

  // From here on nothing can fail. Hit blocks are retained before allocating, so none of them is evicted.
  if (needs_state_slot) seq.state_slot = *state_slots_.allocate();
  if (use_hit) {
    for (BlockId block_id : hit->block_ids) {
      retain_block(block_id);
      table.append(block_id);
    }
    seq.block_hashes = hit->block_hashes;
    seq.num_computed_tokens = hit->num_cached_tokens;
    if (has_state_slots()) {
      state_snapshots_.touch(hit->block_hashes.back());
      pending_state_copies_.push_back(StateCopy{hit->state_snapshot_slot, seq.state_slot});
    }
    num_prefix_query_tokens_ += hit->num_prompt_tokens;
    num_prefix_hit_tokens_ += hit->num_cached_tokens;
  } else if (hit != nullptr && enable_prefix_cache_) {
    num_prefix_query_tokens_ += hit->num_prompt_tokens;  // a miss is a query too
  }
  if (copy_on_write) {
    const int32_t last_idx = table.num_blocks() - 1;
    const BlockId src_block_id = table.block_id(last_idx);
    const BlockId dst_block_id = take_fresh_block();
    set_fill(dst_block_id, block_fills_[size_t(src_block_id)]);
    release_block(src_block_id);  // still held by the other tables
    table.replace(last_idx, dst_block_id);
    pending_copies_.push_back(BlockCopy{src_block_id, dst_block_id});
  }
  for (int32_t i = 0; i < num_fresh; ++i) table.append(take_fresh_block());
  if (num_new_tokens > 0) {
    for (int32_t block_idx = first_pos / block_size_; block_idx <= (end_pos - 1) / block_size_; ++block_idx)
      set_fill(table.block_id(block_idx), std::min(block_size_, end_pos - block_idx * block_size_));
  }
  seq.num_computed_tokens = end_pos;
  return true;
}

void KvCacheManager::fork(const SeqKvState& parent, SeqKvState& child) {
  PAGODA_CHECK(child.empty(), "fork needs an empty child");
  PAGODA_CHECK(child.block_table.block_size() == block_size_ && parent.block_table.block_size() == block_size_);
  for (BlockId block_id : parent.block_table.block_ids()) {
    retain_block(block_id);
    child.block_table.append(block_id);
  }
  child.num_computed_tokens = parent.num_computed_tokens;
  child.block_hashes = parent.block_hashes;
  if (parent.state_slot >= 0) {
    const std::optional<int32_t> slot = state_slots_.allocate();
    PAGODA_CHECK(slot, "no free recurrent-state slot for a fork ({} slots)", state_slots_.num_total());
    child.state_slot = *slot;
    pending_state_copies_.push_back(StateCopy{parent.state_slot, *slot});
  }
}

void KvCacheManager::cache_full_blocks(SeqKvState& seq, std::span<const TokenId> all_tokens) {
  if (!enable_prefix_cache_) return;
  PAGODA_CHECK(int32_t(all_tokens.size()) >= seq.num_computed_tokens, "{} tokens for {} computed ones",
               all_tokens.size(), seq.num_computed_tokens);
  const int32_t num_full = seq.num_computed_tokens / block_size_;
  const int32_t num_hashed = int32_t(seq.block_hashes.size());
  if (num_full <= num_hashed) return;
  append_block_hashes(all_tokens, block_size_, num_full - num_hashed, extra_key_, seq.block_hashes);
  // A block whose hash another block already holds (two sequences computed the same prefix) stays uncached.
  for (int32_t block_idx = num_hashed; block_idx < num_full; ++block_idx)
    pool_.cache_block(seq.block_table.block_id(block_idx), seq.block_hashes[size_t(block_idx)]);
}

bool KvCacheManager::save_state_snapshot(const SeqKvState& seq) {
  if (!enable_prefix_cache_ || seq.state_slot < 0 || state_snapshots_.capacity() == 0) return false;
  const int32_t n = seq.num_computed_tokens;
  if (n == 0 || n % block_size_ != 0 || int32_t(seq.block_hashes.size()) != n / block_size_) return false;
  const BlockHash hash = seq.block_hashes.back();
  if (state_snapshots_.find(hash)) {
    state_snapshots_.touch(hash);
    return false;
  }
  pending_state_copies_.push_back(StateCopy{seq.state_slot, state_snapshots_.insert(hash)});
  return true;
}

void KvCacheManager::discard_pending_copies() {
  pending_copies_.clear();
  pending_state_copies_.clear();
  state_snapshots_.clear();
}

void KvCacheManager::back_up_state(SeqKvState& seq, int32_t covered_tokens) {
  PAGODA_CHECK(state_backups_ && seq.state_slot >= 0, "no backup slot for sequence state slot {}", seq.state_slot);
  const int32_t backup_slot = state_slots_.num_total() + state_snapshots_.capacity() + seq.state_slot;
  pending_state_copies_.push_back(StateCopy{seq.state_slot, backup_slot});
  PAGODA_CHECK(covered_tokens >= 0 && covered_tokens <= seq.num_computed_tokens);
  seq.state_backup_pos = covered_tokens;
}

void KvCacheManager::roll_back(SeqKvState& seq, int32_t num_tokens) {
  PAGODA_CHECK(num_tokens >= 0 && num_tokens <= seq.num_computed_tokens, "roll back to {} of {} computed tokens",
               num_tokens, seq.num_computed_tokens);
  if (seq.state_slot >= 0) {
    const int32_t backup_pos = seq.state_backup_pos;
    seq.state_backup_pos = -1;
    if (num_tokens == seq.num_computed_tokens) return;
    PAGODA_CHECK(backup_pos >= 0 && backup_pos <= num_tokens,
                 "a recurrent state cannot be rolled back to {} of {} computed tokens without a backup at or before it",
                 num_tokens, seq.num_computed_tokens);
    pending_state_copies_.push_back(
        StateCopy{state_slots_.num_total() + state_snapshots_.capacity() + seq.state_slot, seq.state_slot});
    num_tokens = backup_pos;
  }
  PAGODA_CHECK(int32_t(seq.block_hashes.size()) * block_size_ <= num_tokens,
               "roll back to {} tokens would drop a hashed block ({} hashed)", num_tokens, seq.block_hashes.size());
  BlockTable& table = seq.block_table;
  const int32_t num_kept = table.num_blocks_for(num_tokens);
  for (int32_t j = table.num_blocks() - 1; j >= num_kept; --j) release_block(table.block_id(j));
  table.truncate(num_kept);
  if (num_tokens % block_size_ != 0) set_fill(table.block_id(num_kept - 1), num_tokens % block_size_);
  seq.num_computed_tokens = num_tokens;
}

void KvCacheManager::free(SeqKvState& seq) {
  const std::span<const BlockId> block_ids = seq.block_table.block_ids();
  for (auto it = block_ids.rbegin(); it != block_ids.rend(); ++it) release_block(*it);
  seq.block_table.clear();
  seq.num_computed_tokens = 0;
  seq.block_hashes.clear();
  if (seq.state_slot >= 0) state_slots_.release(seq.state_slot);
  seq.state_slot = -1;
  seq.state_backup_pos = -1;
}

KvCacheStats KvCacheManager::stats() const {
  KvCacheStats s;
  s.num_total_blocks = pool_.num_total();
  s.num_used_blocks = pool_.num_used();
  s.num_free_blocks = pool_.num_free();
  s.num_cached_blocks = pool_.num_cached();
  s.num_prefix_query_tokens = num_prefix_query_tokens_;
  s.num_prefix_hit_tokens = num_prefix_hit_tokens_;
  s.num_allocated_slots = int64_t(pool_.num_used()) * block_size_;
  s.num_wasted_slots = s.num_allocated_slots - num_filled_slots_;
  return s;
}

}  // namespace pagoda
