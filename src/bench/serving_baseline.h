// The naive-server baselines the benchmarks compare the engine with: request-level (static) batches and a
// contiguous KV layout. The engine itself knows only continuous batching over paged KV; these are simulated
// around it (request_driver.h forms the static batches on the client side; the contiguous layout is a cap on
// running sequences), so no special case runs inside the scheduler, the engine or the KV manager. Owns nothing:
// names, parsing, and the arithmetic of the contiguous reservation.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string_view>

#include "engine/engine_config.h"
#include "kv/kv_cache_stats.h"

namespace pagoda::bench {

enum class BatchingMode : uint8_t {
  kContinuous,  // requests join and leave the engine's steps at any step (the engine as it is)
  // Fixed-shape batches, as HF generate or FasterTransformer run them: the requests queued when a batch begins
  // form it (at most batch_size), and every member computes a row each step until the longest one ends (a member
  // that ended is answered at once but keeps its row, as padding); then the next batch forms.
  kStatic,
  // The same request-level batches, but a member that ends leaves the step at once (no padding rows).
  kStaticShrinking,
};

enum class KvLayout : uint8_t {
  kPaged,       // blocks on demand, shared prefixes (the engine as it is)
  kContiguous,  // each sequence reserves max_seq_len positions when admitted (a naive server)
};

// "continuous" | "static" | "static-shrink", as --batching spells them.
std::string_view batching_mode_name(BatchingMode mode);
Result<BatchingMode> parse_batching_mode(std::string_view text);  // errors name --batching
std::string_view kv_layout_name(KvLayout layout);                 // "paged" | "contiguous"
Result<KvLayout> parse_kv_layout(std::string_view text);          // errors name --kv-layout

// The contiguous layout over the paged engine: a naive server reserves ceil(max_seq_len / block_size) blocks per
// sequence at admission and shares nothing, so at most num_blocks / that many sequences run at once. Admission by
// reservation and admission under this cap pick the same sequences (none of them can outgrow its reservation,
// so none is ever preempted); what differs is only the bookkeeping, which ContiguousReservation reproduces.
struct ContiguousReservation {
  int32_t blocks_per_seq = 0;  // ceil(max_seq_len / block_size)
  int32_t max_num_seqs = 0;    // num_blocks / blocks_per_seq

  static ContiguousReservation of(const EngineConfig& config);
  // Blocks reserved by `num_running` sequences, and the slots of them no token fills (the pool's filled slots
  // are the same in either layout).
  int64_t num_reserved_blocks(int32_t num_running) const { return int64_t(num_running) * blocks_per_seq; }
  int64_t num_wasted_slots(int32_t num_running, const KvCacheStats& paged, int32_t block_size) const;
};

// `config` as a naive server of `layout` runs: contiguous caps max_num_seqs at the reservation's count and turns
// the prefix cache off. Errors: not even one sequence of max_seq_len fits the pool.
Status apply_kv_layout(KvLayout layout, EngineConfig& config);

}  // namespace pagoda::bench
