// max_concurrent_seqs: how many sequences of a workload a KV budget of fixed bytes holds at once, for a layout
// (contiguous reserves max_seq_len per sequence; paged only the blocks a sequence fills) and with or without a
// prefix cache (the full blocks of a prefix every prompt shares are stored once). Pure arithmetic: the figure
// the ablation's "max seqs" column shows.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/serving_baseline.h"
#include "kv/kv_cache_view.h"

namespace pagoda::bench {

struct KvCapacityQuery {
  int64_t budget_bytes = 0;
  int64_t bytes_per_block = 0;    // K and V of every layer for one block, at the cache's precision
  int32_t block_size = 16;        // tokens per block
  int32_t max_seq_len = 0;        // what a contiguous layout reserves per sequence
  int32_t seq_len = 0;            // prompt + output tokens of one request
  int32_t shared_prefix_len = 0;  // leading prompt tokens every request shares
  KvLayout layout = KvLayout::kPaged;
  bool prefix_cache = false;  // paged only
};

// 0 when not even one sequence fits.
int32_t max_concurrent_seqs(const KvCapacityQuery& query);

// One KV type's cost and what a fixed budget holds with it (paged, no prefix cache): `pagoda bench latency`'s table.
struct KvTypeCapacity {
  KvDType type = KvDType::kF16;
  bool fits = true;  // false: the model's heads cannot be stored in it (q8_0 / q4_0 need heads of 32 values)
  int64_t bytes_per_token = 0;
  int32_t max_seqs = 0;  // sequences of seq_len tokens in budget_bytes
};
// f32, f16, q8_0 and q4_0 (K and V both of the type) for a model of `shape`.
std::vector<KvTypeCapacity> kv_capacity_by_type(const KvShape& shape, int64_t budget_bytes, int32_t block_size,
                                                int32_t seq_len);

}  // namespace pagoda::bench
