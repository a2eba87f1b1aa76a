// Sizing the KV pool.
#include "engine/kv_pool_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace pagoda {
namespace {

std::string format_bytes(int64_t bytes) {
  const double b = double(bytes);
  if (b >= double(1ll << 30)) return fmt::format("{:.2f} GiB", b / double(1ll << 30));
  if (b >= double(1ll << 20)) return fmt::format("{:.1f} MiB", b / double(1ll << 20));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace

Result<KvPoolPlan> plan_kv_pool(const KvPoolRequest& r, int64_t available_ram) {
  if (r.block_size < 1 || r.bytes_per_block < 1 || r.max_seq_len < 1) return make_error("KV pool: bad shape");
  const int64_t blocks_per_seq = (r.max_seq_len + r.block_size - 1) / r.block_size;
  KvPoolPlan plan;
  plan.block_size = r.block_size;
  plan.bytes_per_block = r.bytes_per_block;
  int64_t num_blocks = 0;
  if (r.num_blocks > 0) {
    num_blocks = r.num_blocks;
    plan.source = "kv_cache.max_entries / --kv-blocks";
  } else if (r.memory_gib) {
    if (!(*r.memory_gib > 0.0) || !std::isfinite(*r.memory_gib))
      return make_error(fmt::format("--kv-memory must be a positive number of GiB, got {}", *r.memory_gib));
    num_blocks = int64_t(*r.memory_gib * double(1ll << 30) / double(r.bytes_per_block));
    if (num_blocks < 1)
      return make_error(fmt::format("--kv-memory {} GiB is less than one KV block ({})", *r.memory_gib,
                                    format_bytes(r.bytes_per_block)));
    plan.source = fmt::format("--kv-memory {} GiB", *r.memory_gib);
  } else {
    const int64_t share = int64_t(double(available_ram) * r.free_ram_share);
    const int64_t cap = blocks_per_seq * std::max(1, r.max_num_seqs);
    num_blocks = std::clamp<int64_t>(share / r.bytes_per_block, 1, cap);
    plan.source = num_blocks == cap ? fmt::format("enough for {} sequences of max_seq_len (auto)", r.max_num_seqs)
                                    : fmt::format("{:.0f}% of free RAM ({}) (auto)", r.free_ram_share * 100.0,
                                                  format_bytes(available_ram));
  }
  if (num_blocks > (int64_t(1) << 30) / std::max(1, r.block_size))
    return make_error(fmt::format("a KV pool of {} blocks is too many; lower kv_cache.max_entries", num_blocks));
  plan.num_blocks = int32_t(num_blocks);
  plan.total_bytes = num_blocks * r.bytes_per_block;
  plan.num_tokens = num_blocks * r.block_size;
  plan.max_full_length_seqs = int32_t(num_blocks / blocks_per_seq);
  return plan;
}

std::string describe_kv_pool(const KvPoolPlan& p) {
  return fmt::format(
      "{} blocks x {} tokens = {} tokens, {} ({} per block; {} sequences of max_seq_len at once); "
      "sized from {}",
      p.num_blocks, p.block_size, p.num_tokens, format_bytes(p.total_bytes), format_bytes(p.bytes_per_block),
      p.max_full_length_seqs, p.source);
}

std::string kv_stored_types_name(KvCacheTypes types, bool v_in_k) {
  if (v_in_k) return fmt::format("K {} (V read from K: no V cache)", kv_dtype_name(types.k));
  return fmt::format("K {} + V {}", kv_dtype_name(types.k), kv_dtype_name(types.v));
}

}  // namespace pagoda
