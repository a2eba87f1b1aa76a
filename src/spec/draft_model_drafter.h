// DraftModelDrafter: drafts from a smaller model with the target's vocabulary (vLLM's "draft_model" method): the
// draft model's greedy continuation of a sequence's tokens, one forward pass per draft after catching up on the
// tokens it has not seen. Greedy drafts are a deterministic proposal, so the verifier's rule for them (accept a
// draft with the target's probability of it) keeps the target's output distribution, as with prompt lookup.
//
// It keeps no per-sequence state: its own small paged KV pool with prefix caching remembers the blocks of the
// token runs it has computed (keyed by their tokens, as the engine's prefix cache is), so each proposal computes
// only what is new since the last one (the drafts accepted or corrected, and the unfinished last block) and the
// pool's least recently used blocks make room. Owns the draft KV and the draft's workspace; borrows the model and
// the engine's thread pool (called from the engine loop, which runs one forward at a time). Not batched across
// sequences: each proposal runs its own forward passes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_storage.h"
#include "model/model.h"
#include "model/single_sequence_batch.h"
#include "model/workspace.h"
#include "spec/drafter.h"

namespace pagoda {

class DraftModelDrafter final : public Drafter {
 public:
  struct Options {
    int32_t num_blocks = 0;    // the draft's KV pool
    int32_t block_size = 16;   // tokens per block
    KvCacheTypes kv_types = {};  // its K and V types (default f16)
    int32_t max_context = 0;   // tokens a proposal may see: the target's max_seq_len + the drafts
    int32_t rope_context = 0;  // the target's configured context (EngineConfig::rope_context); 0 = max_context
    int32_t max_chunk = 256;   // catching up runs in forward passes of at most this many tokens
  };
  // `model` and `pool` are borrowed and must outlive the drafter. Options must be positive and the pool large
  // enough for one sequence of max_context tokens (Engine::create checks it).
  DraftModelDrafter(const Model& model, ThreadPool& pool, const Options& options);

  void propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
               std::vector<float>& chances) override;
  bool pays_per_draft() const override { return true; }

  // Tokens the draft model computed so far (catching up and drafting): what the prefix reuse saves shows here.
  int64_t num_computed_tokens() const { return num_computed_tokens_; }

  // Blocks one sequence of `max_context` tokens needs.
  static int32_t min_blocks(int32_t max_context, int32_t block_size) {
    return (max_context + block_size - 1) / block_size;
  }

 private:
  // Runs the forward pass over tokens[first, last) of `seq` (slots already allocated) and returns the argmax of
  // the last row's logits.
  TokenId forward_argmax(const SeqKvState& seq, std::span<const TokenId> tokens, int32_t first, int32_t last);

  const Model& model_;
  ThreadPool& pool_;
  Options options_;
  KvStorage kv_storage_;
  KvCacheManager kv_manager_;
  Workspace workspace_;
  std::vector<TokenId> run_;  // the tokens then the drafts so far
  SingleSequenceBatch batch_;
  int64_t num_computed_tokens_ = 0;
};

}  // namespace pagoda
