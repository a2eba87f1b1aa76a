// run_isa_kernel_bench: every instruction-set level's kernels on the same inputs, one level after another in one
// process, so each level's gain is a ratio of figures taken seconds apart: the quantized and float matmuls at
// decode (1 token), batched-decode (16) and prefill (128) sizes, each on the level's preferred in-memory layout and
// split over the pool as the model splits it, and the vector ops (activation quantization, RMSNorm+quant, SiLU*up,
// softmax, RoPE, paged attention over f32 and INT8 K/V for a decode token and a prefill chunk). Levels take turns
// within each round of repetitions and each level's best round counts, for a shared machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"

namespace pagoda::bench {

struct IsaKernelBenchOptions {
  int64_t num_out = 5632;  // TinyLlama's FFN gate/up shape
  int64_t num_in = 2048;
  std::vector<int32_t> token_counts{1, 16, 128};
  double min_seconds = 0.2;  // per (kernel, level): repeat at least this long, and at least 5 rounds
};

struct IsaKernelFigure {
  std::string kernel;             // "q4_0 matmul x16", "rmsnorm+q8_0", ...
  std::string unit;               // "GOP/s" (2 per multiply-add) or "Mrow/s"
  std::vector<double> per_level;  // one per level of the run, in its order; 0 where a level has no such kernel
};

// levels: the levels to compare (each must be supported: kernels_for non-null).
std::vector<IsaKernelFigure> run_isa_kernel_bench(ThreadPool& pool, const std::vector<kernels::Isa>& levels,
                                                  const IsaKernelBenchOptions& options);

}  // namespace pagoda::bench
