// measure_matmul_gflops: this machine's f32 matmul throughput on the engine's threads and kernels (the compute
// side of prefill, as memory bandwidth is the side of decode): a [num_out, num_in] weight times num_tokens
// activation rows, the rows split across the pool, best of the repetitions. 2 flops per multiply-add.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace pagoda::bench {

double measure_matmul_gflops(ThreadPool& pool, const kernels::KernelTable& kernels, int64_t num_out = 2048,
                             int64_t num_in = 2048, int64_t num_tokens = 32, int32_t num_reps = 3);

}  // namespace pagoda::bench
