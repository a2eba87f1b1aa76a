// KvPoolPlan: how big the KV block pool is and why: from kv_cache.max_entries (--kv-blocks), from a memory
// budget (--kv-memory), or by default from a share of the RAM that is free now, never more than max_num_seqs
// sequences at max_seq_len can use. A plain value that start-up prints.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"

namespace pagoda {

struct KvPoolRequest {
  int32_t num_blocks = 0;            // > 0: exactly this many (kv_cache.max_entries, --kv-blocks)
  std::optional<double> memory_gib;  // else: this budget
  int32_t block_size = 16;           // tokens per block
  int64_t bytes_per_block = 0;       // K and V of every layer for one block
  int32_t max_seq_len = 0;           // tokens of one sequence
  int32_t max_num_seqs = 256;        // the default never sizes beyond this many full-length sequences
  double free_ram_share = 0.4;       // the default's share of MemAvailable
};

struct KvPoolPlan {
  int32_t num_blocks = 0;
  int32_t block_size = 0;
  int64_t bytes_per_block = 0;
  int64_t total_bytes = 0;
  int64_t num_tokens = 0;            // num_blocks * block_size
  int32_t max_full_length_seqs = 0;  // sequences of max_seq_len that fit at once
  bool v_in_k = false;               // the cache holds K alone and V is read from it (KvShape::v_in_k)
  std::string source;                // how num_blocks was chosen, for the start-up line
};

// `available_ram_bytes` is what the default takes its share of (core/system_memory.h's available_ram_bytes(), read by
// the caller). Errors: a memory budget below one block, or an absurd block count. Whether one sequence fits is the
// engine's check.
Result<KvPoolPlan> plan_kv_pool(const KvPoolRequest& request, int64_t available_ram_bytes);
// "KV cache: 1024 blocks x 16 tokens = 16384 tokens, 40.0 MiB (40 KiB per block; 32 sequences of 512 tokens
// at once); from --kv-blocks"
std::string describe_kv_pool(const KvPoolPlan& plan);
// What a cache of these types stores, for start-up lines: "K q8_0 + V f16", or "K f16 (V read from K: no V cache)"
// where it holds no V bytes (KvPoolPlan::v_in_k).
std::string kv_stored_types_name(KvCacheTypes types, bool v_in_k);

}  // namespace pagoda
