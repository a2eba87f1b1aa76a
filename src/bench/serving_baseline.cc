// Baseline names and the contiguous reservation's arithmetic.
#include "bench/serving_baseline.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace pagoda::bench {

std::string_view batching_mode_name(BatchingMode mode) {
  switch (mode) {
    case BatchingMode::kContinuous: return "continuous";
    case BatchingMode::kStatic: return "static";
    case BatchingMode::kStaticShrinking: return "static-shrink";
  }
  return "?";
}

Result<BatchingMode> parse_batching_mode(std::string_view text) {
  for (BatchingMode m : {BatchingMode::kContinuous, BatchingMode::kStatic, BatchingMode::kStaticShrinking})
    if (text == batching_mode_name(m)) return m;
  return make_error(
      fmt::format("invalid option: --batching must be continuous, static or static-shrink, got '{}'", text));
}

std::string_view kv_layout_name(KvLayout layout) { return layout == KvLayout::kPaged ? "paged" : "contiguous"; }

Result<KvLayout> parse_kv_layout(std::string_view text) {
  if (text == "paged") return KvLayout::kPaged;
  if (text == "contiguous") return KvLayout::kContiguous;
  return make_error(fmt::format("invalid option: --kv-layout must be paged or contiguous, got '{}'", text));
}

ContiguousReservation ContiguousReservation::of(const EngineConfig& config) {
  ContiguousReservation r;
  r.blocks_per_seq = (config.max_seq_len + config.kv.block_size - 1) / config.kv.block_size;
  r.max_num_seqs = r.blocks_per_seq > 0 ? config.kv.num_blocks / r.blocks_per_seq : 0;
  return r;
}

int64_t ContiguousReservation::num_wasted_slots(int32_t num_running, const KvCacheStats& paged,
                                                int32_t block_size) const {
  const int64_t num_filled = paged.num_allocated_slots - paged.num_wasted_slots;
  return std::max<int64_t>(0, num_reserved_blocks(num_running) * block_size - num_filled);
}

Status apply_kv_layout(KvLayout layout, EngineConfig& config) {
  if (layout == KvLayout::kPaged) return Status();
  const ContiguousReservation r = ContiguousReservation::of(config);
  if (r.max_num_seqs < 1)
    return make_error(fmt::format(
        "the KV pool of {} blocks cannot reserve one sequence of max_seq_len {} ({} blocks of {}) in the contiguous "
        "layout; give it more blocks (--kv-blocks) or memory (--kv-memory), or lower --max-seq-len",
        config.kv.num_blocks, config.max_seq_len, r.blocks_per_seq, config.kv.block_size));
  config.scheduler.max_num_seqs = std::min(config.scheduler.max_num_seqs, r.max_num_seqs);
  config.kv.enable_prefix_cache = false;
  return Status();
}

}  // namespace pagoda::bench
