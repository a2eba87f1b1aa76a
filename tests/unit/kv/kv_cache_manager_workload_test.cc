// A randomized workload for KvCacheManager (fixed seeds, thousands of steps): admissions with prefix hits and
// chunked prefill, decode, speculative decode (k drafts written, a random number accepted, the rest rolled
// back), fork, preemption on out-of-blocks, finish. A fake KV storage holds one token id per
// slot, so the test checks what the bookkeeping promises, not just its counters: every sequence reads back its
// own tokens through its block table (copy-on-write and prefix hits never hand it someone else's K/V), a
// block is written only while one table holds it, and after every step: no block is both free and in use, ref
// counts equal the table references and never go negative, the free list is ordered (uncached before cached),
// the index names exactly the cached blocks, and the wasted-slot figure is exact. At the end every block is free.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "kv/kv_cache_manager.h"

namespace pagoda {
namespace {

constexpr int32_t kWorkloadBlockSize = 4;
constexpr int32_t kNumBlocks = 40;
constexpr int32_t kMaxSeqs = 10;
constexpr int32_t kMaxLen = 44;

struct SimSeq {
  SeqKvState kv{kWorkloadBlockSize};
  std::vector<TokenId> tokens;  // prompt + generated; [0, kv.num_computed_tokens) are written
  bool running = false;         // false: waiting for admission (new or preempted)
};

class Workload {
 public:
  Workload(uint32_t seed, bool enable_prefix_cache)
      : rng_(seed), kv_(options(enable_prefix_cache)), slots_(size_t(kNumBlocks * kWorkloadBlockSize), -1) {
    for (auto& prefix : prefixes_) {
      prefix.resize(16);
      for (TokenId& t : prefix) t = TokenId(rng_() % 6);
    }
  }

  void run(int32_t num_steps) {
    for (int32_t step = 0; step < num_steps; ++step) {
      step_ = step;
      const uint32_t op = rng_() % 10;
      if (op < 2) {
        add_request();
      } else if (op < 3) {
        fork_one();
      } else if (op < 4) {
        finish_one();
      } else {
        advance_one();
      }
      check_invariants();
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (SimSeq& seq : seqs_) kv_.free(seq.kv);
    seqs_.clear();
    check_invariants();
    EXPECT_EQ(kv_.pool().num_free(), kNumBlocks);
    EXPECT_EQ(kv_.pool().num_used(), 0);
    EXPECT_EQ(kv_.stats().num_wasted_slots, 0);
    for (BlockId b = 0; b < kNumBlocks; ++b) EXPECT_EQ(kv_.pool().ref_count(b), 0);
  }

  int64_t num_hit_tokens() const { return kv_.stats().num_prefix_hit_tokens; }
  int32_t num_copies() const { return num_copies_; }
  int32_t num_preemptions() const { return num_preemptions_; }
  int32_t num_rolled_back_blocks() const { return num_rolled_back_blocks_; }
  int32_t num_rejected_drafts() const { return num_rejected_drafts_; }

 private:
  static KvCacheManager::Options options(bool enable_prefix_cache) {
    KvCacheManager::Options o;
    o.num_blocks = kNumBlocks;
    o.block_size = kWorkloadBlockSize;
    o.enable_prefix_cache = enable_prefix_cache;
    return o;
  }

  void add_request() {
    if (int32_t(seqs_.size()) >= kMaxSeqs) return;
    SimSeq seq;
    const auto& prefix = prefixes_[rng_() % prefixes_.size()];
    seq.tokens.assign(prefix.begin(), prefix.begin() + ptrdiff_t(rng_() % (prefix.size() + 1)));
    const uint32_t num_suffix = 1 + rng_() % 8;
    for (uint32_t i = 0; i < num_suffix; ++i) seq.tokens.push_back(TokenId(rng_() % 6));
    seqs_.push_back(std::move(seq));
  }

  // A waiting sequence is admitted with a lookup over all its tokens (a preempted one recomputes them).
  void admit(SimSeq& seq) {
    const PrefixHit hit = kv_.lookup_prefix(seq.tokens);
    // A hit must hold exactly this prompt's tokens: a cached prefix never changes an answer.
    for (size_t j = 0; j < hit.block_ids.size(); ++j)
      for (int32_t i = 0; i < kWorkloadBlockSize; ++i)
        ASSERT_EQ(slots_[size_t(hit.block_ids[j] * kWorkloadBlockSize + i)], seq.tokens[j * kWorkloadBlockSize + size_t(i)])
            << "step " << step_;
    const int32_t num_left = int32_t(seq.tokens.size()) - hit.num_cached_tokens;
    const int32_t num_new = 1 + int32_t(rng_() % uint32_t(num_left));  // chunked prefill
    if (!try_allocate(seq, num_new, &hit)) return;
    seq.running = true;
  }

  void advance_one() {
    if (seqs_.empty()) return;
    SimSeq& seq = seqs_[rng_() % seqs_.size()];
    if (!seq.running) {
      admit(seq);
      return;
    }
    int32_t num_new;
    if (seq.kv.num_computed_tokens < int32_t(seq.tokens.size())) {
      num_new = 1 + int32_t(rng_() % uint32_t(int32_t(seq.tokens.size()) - seq.kv.num_computed_tokens));
    } else {
      if (int32_t(seq.tokens.size()) >= kMaxLen) return;
      seq.tokens.push_back(TokenId(rng_() % 6));  // the token sampled last step
      num_new = 1;
      if (rng_() % 3 == 0 && speculate(seq)) return;
    }
    if (!try_allocate(seq, num_new, nullptr)) {
      // Preempt: free everything; it recomputes from a lookup later.
      kv_.free(seq.kv);
      seq.running = false;
      ++num_preemptions_;
    }
  }

  // A decode step verifying k drafts: k + 1 positions get slots and are written (the last token, then the
  // drafts), a random number of drafts is accepted (appended to the tokens) and the KV of the rejected ones is
  // rolled back, before the full blocks are hashed, as Scheduler::update does.
  // False: no room for drafts (the caller decodes without them).
  bool speculate(SimSeq& seq) {
    const int32_t num_tokens = int32_t(seq.tokens.size());
    const int32_t k = std::min(1 + int32_t(rng_() % 6), kMaxLen - num_tokens);
    if (k < 1) return false;
    std::vector<TokenId> drafts(static_cast<size_t>(k));
    for (TokenId& t : drafts) t = TokenId(rng_() % 6);
    const int32_t num_used_before = kv_.pool().num_used();
    const int32_t first_pos = seq.kv.num_computed_tokens;
    if (!kv_.allocate_slots(seq.kv, 1 + k)) return false;
    for (const BlockCopy& copy : kv_.pending_copies()) {
      std::copy_n(slots_.begin() + copy.src_block_id * kWorkloadBlockSize, kWorkloadBlockSize,
                  slots_.begin() + copy.dst_block_id * kWorkloadBlockSize);
      ++num_copies_;
    }
    kv_.clear_pending_copies();
    for (Pos pos = first_pos; pos < seq.kv.num_computed_tokens; ++pos) {
      const BlockId block_id = seq.kv.block_table.block_id(pos / kWorkloadBlockSize);
      EXPECT_EQ(kv_.pool().ref_count(block_id), 1) << "step " << step_ << ": draft written into a shared block";
      EXPECT_FALSE(kv_.pool().is_cached(block_id)) << "step " << step_ << ": draft written into a cached block";
      slots_[size_t(seq.kv.block_table.slot_id(pos))] =
          pos < num_tokens ? seq.tokens[size_t(pos)] : drafts[size_t(pos - num_tokens)];
    }
    const int32_t num_accepted = int32_t(rng_() % uint32_t(k + 1));
    seq.tokens.insert(seq.tokens.end(), drafts.begin(), drafts.begin() + num_accepted);
    const int32_t num_used_peak = kv_.pool().num_used();
    kv_.roll_back(seq.kv, num_tokens + num_accepted);
    EXPECT_EQ(seq.kv.num_computed_tokens, int32_t(seq.tokens.size()));
    // Blocks allocated for rejected drafts only are back in the pool.
    EXPECT_LE(kv_.pool().num_used(), num_used_peak);
    EXPECT_GE(kv_.pool().num_used(), num_used_before);
    num_rolled_back_blocks_ += num_used_peak - kv_.pool().num_used();
    num_rejected_drafts_ += k - num_accepted;
    kv_.cache_full_blocks(seq.kv, seq.tokens);
    return true;
  }

  // allocate_slots, then what the engine does around it: the queued copies, the forward's writes, caching.
  bool try_allocate(SimSeq& seq, int32_t num_new, const PrefixHit* hit) {
    const std::vector<BlockId> table_before(seq.kv.block_table.block_ids().begin(),
                                            seq.kv.block_table.block_ids().end());
    const int32_t computed_before = seq.kv.num_computed_tokens;
    const std::vector<BlockId> free_before = kv_.pool().free_blocks_in_order();
    const int32_t num_copies_before = int32_t(kv_.pending_copies().size());
    const bool ok = hit ? kv_.allocate_slots(seq.kv, num_new, *hit) : kv_.allocate_slots(seq.kv, num_new);
    if (!ok) {
      EXPECT_EQ(std::vector<BlockId>(seq.kv.block_table.block_ids().begin(), seq.kv.block_table.block_ids().end()),
                table_before)
          << "step " << step_;
      EXPECT_EQ(seq.kv.num_computed_tokens, computed_before);
      EXPECT_EQ(kv_.pool().free_blocks_in_order(), free_before);
      EXPECT_EQ(int32_t(kv_.pending_copies().size()), num_copies_before);
      return false;
    }
    for (const BlockCopy& copy : kv_.pending_copies()) {
      std::copy_n(slots_.begin() + copy.src_block_id * kWorkloadBlockSize, kWorkloadBlockSize,
                  slots_.begin() + copy.dst_block_id * kWorkloadBlockSize);
      ++num_copies_;
    }
    kv_.clear_pending_copies();
    const int32_t first_pos = seq.kv.num_computed_tokens - num_new;
    for (Pos pos = first_pos; pos < seq.kv.num_computed_tokens; ++pos) {
      const BlockId block_id = seq.kv.block_table.block_id(pos / kWorkloadBlockSize);
      EXPECT_EQ(kv_.pool().ref_count(block_id), 1) << "step " << step_ << ": write into shared block " << block_id;
      EXPECT_FALSE(kv_.pool().is_cached(block_id)) << "step " << step_ << ": write into cached block " << block_id;
      slots_[size_t(seq.kv.block_table.slot_id(pos))] = seq.tokens[size_t(pos)];
    }
    kv_.cache_full_blocks(seq.kv, seq.tokens);
    return true;
  }

  void fork_one() {
    if (seqs_.empty() || int32_t(seqs_.size()) >= kMaxSeqs) return;
    const size_t parent_idx = rng_() % seqs_.size();
    if (!seqs_[parent_idx].running) return;
    SimSeq child;
    child.tokens = seqs_[parent_idx].tokens;
    child.tokens.resize(size_t(seqs_[parent_idx].kv.num_computed_tokens));
    child.running = true;
    kv_.fork(seqs_[parent_idx].kv, child.kv);
    seqs_.push_back(std::move(child));
  }

  void finish_one() {
    if (seqs_.empty()) return;
    const size_t idx = rng_() % seqs_.size();
    kv_.free(seqs_[idx].kv);
    seqs_.erase(seqs_.begin() + ptrdiff_t(idx));
  }

  void check_invariants() {
    const BlockPool& pool = kv_.pool();
    std::vector<int32_t> num_refs(kNumBlocks, 0), fills(kNumBlocks, 0);
    for (const SimSeq& seq : seqs_) {
      const BlockTable& table = seq.kv.block_table;
      ASSERT_EQ(table.num_blocks(), table.num_blocks_for(seq.kv.num_computed_tokens)) << "step " << step_;
      if (!seq.running) {
        ASSERT_TRUE(seq.kv.empty());
      }
      for (int32_t j = 0; j < table.num_blocks(); ++j) {
        const BlockId b = table.block_id(j);
        ++num_refs[size_t(b)];
        fills[size_t(b)] =
            std::max(fills[size_t(b)], std::min(kWorkloadBlockSize, seq.kv.num_computed_tokens - j * kWorkloadBlockSize));
      }
      for (Pos pos = 0; pos < seq.kv.num_computed_tokens; ++pos)
        ASSERT_EQ(slots_[size_t(table.slot_id(pos))], seq.tokens[size_t(pos)]) << "step " << step_ << " pos " << pos;
      // The chained hashes match the tokens.
      std::vector<BlockHash> expected;
      append_block_hashes(seq.tokens, kWorkloadBlockSize, int32_t(seq.kv.block_hashes.size()), 0, expected);
      ASSERT_EQ(seq.kv.block_hashes, expected) << "step " << step_;
      if (kv_.prefix_cache_enabled()) {
        ASSERT_EQ(int32_t(seq.kv.block_hashes.size()), seq.kv.num_computed_tokens / kWorkloadBlockSize);
      }
    }
    int64_t num_filled = 0;
    int32_t num_used = 0, num_indexed = 0;
    for (BlockId b = 0; b < kNumBlocks; ++b) {
      ASSERT_GE(pool.ref_count(b), 0);
      ASSERT_EQ(pool.ref_count(b), num_refs[size_t(b)]) << "step " << step_ << " block " << b;
      if (num_refs[size_t(b)] > 0) {
        ++num_used;
        num_filled += fills[size_t(b)];
      }
      if (pool.is_cached(b)) {
        ++num_indexed;
        ASSERT_EQ(kv_.prefix_cache().find(*pool.block_hash(b)), b);
      }
    }
    ASSERT_EQ(kv_.prefix_cache().size(), num_indexed);
    const std::vector<BlockId> free_ids = pool.free_blocks_in_order();
    ASSERT_EQ(int32_t(free_ids.size()), pool.num_free());
    ASSERT_EQ(std::set<BlockId>(free_ids.begin(), free_ids.end()).size(), free_ids.size());
    bool seen_cached = false;
    int32_t num_cached_free = 0;
    for (BlockId b : free_ids) {
      ASSERT_EQ(num_refs[size_t(b)], 0) << "step " << step_ << ": block " << b << " is free and in use";
      if (pool.is_cached(b)) {
        seen_cached = true;
        ++num_cached_free;
      } else {
        ASSERT_FALSE(seen_cached) << "step " << step_ << ": uncached block " << b << " after a cached one";
      }
    }
    ASSERT_EQ(pool.num_used(), num_used);
    ASSERT_EQ(pool.num_free() + pool.num_used(), kNumBlocks);
    ASSERT_EQ(pool.num_cached(), num_cached_free);
    const KvCacheStats s = kv_.stats();
    ASSERT_EQ(s.num_wasted_slots, int64_t(num_used) * kWorkloadBlockSize - num_filled) << "step " << step_;
  }

  std::mt19937 rng_;
  KvCacheManager kv_;
  std::vector<TokenId> slots_;  // [num_blocks * block_size] the token whose K/V a slot holds, -1: never written
  std::vector<SimSeq> seqs_;
  std::vector<std::vector<TokenId>> prefixes_ = std::vector<std::vector<TokenId>>(3);
  int32_t step_ = 0;
  int32_t num_copies_ = 0;
  int32_t num_preemptions_ = 0;
  int32_t num_rolled_back_blocks_ = 0;
  int32_t num_rejected_drafts_ = 0;
};

TEST(KvCacheManagerWorkload, InvariantsHoldWithPrefixCache) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    Workload workload(seed, true);
    workload.run(4000);
    if (HasFatalFailure()) return;
    // The workload must actually exercise what it checks.
    EXPECT_GT(workload.num_hit_tokens(), 0) << "seed " << seed;
    EXPECT_GT(workload.num_copies(), 0) << "seed " << seed;
    EXPECT_GT(workload.num_preemptions(), 0) << "seed " << seed;
    EXPECT_GT(workload.num_rejected_drafts(), 0) << "seed " << seed;
    EXPECT_GT(workload.num_rolled_back_blocks(), 0) << "seed " << seed;
  }
}

TEST(KvCacheManagerWorkload, InvariantsHoldWithoutPrefixCache) {
  Workload workload(4, false);
  workload.run(4000);
  EXPECT_EQ(workload.num_hit_tokens(), 0);
  EXPECT_GT(workload.num_copies(), 0);
  EXPECT_GT(workload.num_rolled_back_blocks(), 0);
}

}  // namespace
}  // namespace pagoda
