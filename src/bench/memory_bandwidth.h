// measure_memory_bandwidth: STREAM-style bandwidth of this machine over arrays far larger than the last-level
// cache, on the engine's threads: a read-only stream (the access pattern of decode, which reads every weight
// once per token; MBU divides by it) and the STREAM triad. Bytes are counted as STREAM does (no write-allocate).
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace pagoda::bench {

struct MemoryBandwidth {
  double read_gbps = 0.0;  // 1e9 bytes/s, best of the repetitions
  double triad_gbps = 0.0;
  int64_t array_bytes = 0;  // per array
  int32_t num_threads = 0;
};

// array_mib: size of each of the three arrays (default 256 MiB, far above a 32 MiB L3).
MemoryBandwidth measure_memory_bandwidth(ThreadPool& pool, int64_t array_mib = 256, int32_t num_reps = 5);
// The read-only figure (GB/s) on a pool of num_threads threads of its own, gone when it returns (before an engine's
// threads run again): the bandwidth a model run on that many threads can reach, MBU's denominator.
double read_bandwidth_gbps(int32_t num_threads);

}  // namespace pagoda::bench
