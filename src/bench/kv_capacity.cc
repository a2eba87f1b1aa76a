// Sequences a KV budget holds.
#include "bench/kv_capacity.h"

#include <algorithm>

#include "kv/kv_storage.h"

namespace pagoda::bench {

int32_t max_concurrent_seqs(const KvCapacityQuery& q) {
  if (q.bytes_per_block <= 0 || q.block_size <= 0) return 0;
  const int64_t num_blocks = q.budget_bytes / q.bytes_per_block;
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  if (q.layout == KvLayout::kContiguous) return int32_t(num_blocks / ceil_div(q.max_seq_len, q.block_size));
  const int64_t per_seq = ceil_div(q.seq_len, q.block_size);
  if (per_seq <= 0 || num_blocks < per_seq) return 0;
  if (!q.prefix_cache) return int32_t(num_blocks / per_seq);
  // Only full blocks are shared, and never the block holding a prompt's last token (it is computed anew).
  const int64_t shared = std::min<int64_t>(q.shared_prefix_len / q.block_size, per_seq - 1);
  return int32_t(1 + (num_blocks - per_seq) / (per_seq - shared));
}

std::vector<KvTypeCapacity> kv_capacity_by_type(const KvShape& shape, int64_t budget_bytes, int32_t block_size,
                                                int32_t seq_len) {
  std::vector<KvTypeCapacity> out;
  for (KvDType type : {KvDType::kF32, KvDType::kF16, KvDType::kQ8_0, KvDType::kQ4_0}) {
    KvTypeCapacity c;
    c.type = type;
    c.fits = KvStorage::kv_types_fit(shape, type).empty();
    c.bytes_per_token = KvStorage::bytes_per_token(shape, type);
    if (c.fits) {
      KvCapacityQuery q;
      q.budget_bytes = budget_bytes;
      q.bytes_per_block = KvStorage::bytes_per_block_for(shape, block_size, type);
      q.block_size = block_size;
      q.seq_len = seq_len;
      c.max_seqs = max_concurrent_seqs(q);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace pagoda::bench
