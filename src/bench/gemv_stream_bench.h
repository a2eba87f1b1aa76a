// run_gemv_stream_bench: decode's matrix-vector products (one token) over a set of Llama-2-7B-shaped matrices far
// larger than the last-level cache, cycled so that every weight comes from DRAM as in decode, per weight type and
// thread count, beside the same kernel over a matrix that stays in L2 (its compute ceiling) and the read-only
// bandwidth those threads reach: a type whose cached rate is not well above the bandwidth is compute-bound. The
// matrices are in the layout the kernel table prefers (as the loader repacks them), split over the pool as the
// model splits decode's rows. Figures, not tests; must not touch the kernels or the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "kernels/kernels.h"

namespace pagoda::bench {

struct GemvStreamOptions {
  std::vector<DType> types{DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS, DType::kQ8_0};
  std::vector<int32_t> thread_counts{1, 2};
  int64_t min_stream_bytes = int64_t(1200) << 20;  // per type: whole 7B layers until at least this many bytes
  int32_t num_reps = 3;                            // passes over the set; the best counts
  std::optional<double> read_gbps;                 // the read bandwidth for every thread count; measured if unset
};

struct GemvStreamFigure {
  DType dtype = DType::kF32;
  DType layout = DType::kF32;  // the in-memory layout the kernel ran on
  int32_t num_threads = 0;
  int64_t stream_bytes = 0;  // bytes of weights in one pass over the set, in the layout
  int64_t stream_weights = 0;
  double stream_gbps = 0.0;  // 1e9 bytes/s from DRAM, best pass
  double cached_gbps = 0.0;  // 1e9 bytes/s over a matrix that each thread's L2 holds
  double read_gbps = 0.0;    // the read-only stream of bench/memory_bandwidth.h on as many threads
  double clock_ghz = 0.0;    // estimated (one dependent add a cycle); 0 where not measured
  // Weights per cycle and thread, streamed and cached (0 without a clock).
  double stream_weights_per_cycle = 0.0;
  double cached_weights_per_cycle = 0.0;
};

// The types the bench can encode (from random f32 weights with the quantizers of quant/).
bool gemv_stream_supports(DType dtype);
// The clock of the calling thread's core, estimated from a chain of dependent integer adds; 0 off x86-64.
double estimate_clock_ghz();
// One figure per (type, thread count), types in the outer loop; every type must be supported.
std::vector<GemvStreamFigure> run_gemv_stream_bench(const kernels::KernelTable& kernels, const GemvStreamOptions& o);

}  // namespace pagoda::bench
