// KvCacheStats: a snapshot of the KV pool's figures for logs and /metrics. A plain value, counted since start.
#pragma once

#include <cstdint>

namespace pagoda {

struct KvCacheStats {
  int32_t num_total_blocks = 0;
  int32_t num_used_blocks = 0;          // ref count > 0
  int32_t num_free_blocks = 0;          // ref count 0, cached ones included (they are evictable)
  int32_t num_cached_blocks = 0;        // free but still findable by a prefix lookup
  int64_t num_prefix_query_tokens = 0;  // prompt tokens of admissions that came with a lookup
  int64_t num_prefix_hit_tokens = 0;    // of those, tokens served from cached blocks
  int64_t num_allocated_slots = 0;      // num_used_blocks * block_size
  int64_t num_wasted_slots = 0;         // allocated slots that hold no token (tails of last blocks)
};

}  // namespace pagoda
