// The draft model's proposals: catch up through its prefix-cached KV pool, then greedy drafts one pass each.
#include "spec/draft_model_drafter.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

DraftModelDrafter::DraftModelDrafter(const Model& model, ThreadPool& pool, const Options& options)
    : model_(model),
      pool_(pool),
      options_(options),
      kv_storage_(model.config().kv_shape(), options.num_blocks, options.block_size, options.kv_types),
      kv_manager_(KvCacheManager::Options{
          .num_blocks = options.num_blocks, .block_size = options.block_size, .enable_prefix_cache = true}),
      workspace_(model.config(), std::min(options.max_chunk, options.max_context), options.max_context,
                 /*max_logits_rows=*/1, pool.num_threads()) {
  PAGODA_CHECK(options.num_blocks >= min_blocks(options.max_context, options.block_size),
               "the draft KV pool ({} blocks) cannot hold one sequence of {} tokens", options.num_blocks,
               options.max_context);
  if (options.rope_context > 0) workspace_.rope_context = options.rope_context;
}

TokenId DraftModelDrafter::forward_argmax(const SeqKvState& seq, std::span<const TokenId> tokens, int32_t first,
                                          int32_t last) {
  const BatchView batch = batch_.view(tokens, seq.block_table.block_ids(), seq.block_table.block_size(), first, last);
  const LogitsView logits = model_.forward(batch, kv_storage_.view(), workspace_, pool_);
  num_computed_tokens_ += last - first;
  const std::span<float> row = logits.row(0);
  return TokenId(std::max_element(row.begin(), row.end()) - row.begin());
}

void DraftModelDrafter::propose(std::span<const TokenId> tokens, int32_t max_drafts, std::vector<TokenId>& drafts,
                                std::vector<float>& chances) {
  drafts.clear();
  chances.clear();  // the draft model's own probabilities would serve; not computed (its argmax is all it takes)
  const int32_t num_tokens = int32_t(tokens.size());
  max_drafts = std::min(max_drafts, options_.max_context - num_tokens);
  if (num_tokens == 0 || max_drafts <= 0) return;
  run_.assign(tokens.begin(), tokens.end());

  SeqKvState seq = kv_manager_.make_seq_state();
  const PrefixHit hit = kv_manager_.lookup_prefix(run_);  // never the last token's block: it is computed
  if (!kv_manager_.allocate_slots(seq, num_tokens - hit.num_cached_tokens, hit)) return;
  // A fresh sequence shares no partial block, so nothing is copied; a queued copy would be a bookkeeping error.
  PAGODA_CHECK(kv_manager_.pending_copies().empty(), "the draft KV pool queued a copy for a fresh sequence");

  TokenId next = 0;
  try {
    for (int32_t first = hit.num_cached_tokens; first < num_tokens; first += options_.max_chunk)
      next = forward_argmax(seq, run_, first, std::min(num_tokens, first + options_.max_chunk));
    drafts.push_back(next);
    while (int32_t(drafts.size()) < max_drafts) {
      run_.push_back(next);
      if (!kv_manager_.allocate_slots(seq, 1)) break;
      next = forward_argmax(seq, run_, int32_t(run_.size()) - 1, int32_t(run_.size()));
      drafts.push_back(next);
    }
  } catch (...) {  // a pass that throws (out of memory): its blocks go back, unhashed (their K/V is unfinished)
    drafts.clear();
    kv_manager_.free(seq);
    throw;
  }
  // Every position the passes wrote is now K/V of `run_`'s tokens: index the full blocks for the next proposal
  // (the drafts' blocks too: a later sequence with those very tokens reuses them), then give the blocks back.
  kv_manager_.cache_full_blocks(seq, std::span<const TokenId>(run_).first(size_t(seq.num_computed_tokens)));
  kv_manager_.free(seq);
}

}  // namespace pagoda
