// f32 matmul throughput.
#include "bench/matmul_throughput.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

namespace pagoda::bench {

double measure_matmul_gflops(ThreadPool& pool, const kernels::KernelTable& kernels, int64_t num_out, int64_t num_in,
                             int64_t num_tokens, int32_t num_reps) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> w(size_t(num_out * num_in)), x(size_t(num_tokens * num_in));  // f32 [out, in], [tokens, in]
  for (float& v : w) v = u(rng);
  for (float& v : x) v = u(rng);
  const int32_t num_threads = pool.num_threads();
  // f32 [num_threads][num_tokens, rows of the slice]: each thread writes its own block, rows slice by slice.
  const int64_t slice = (num_out + num_threads - 1) / num_threads;
  std::vector<float> y(size_t(num_threads * num_tokens * slice));
  double best_s = 1e30;
  for (int32_t rep = 0; rep < num_reps + 1; ++rep) {  // the first is a warm-up
    const auto start = std::chrono::steady_clock::now();
    pool.run([&](int32_t t) {
      const int64_t lo = std::min(num_out, slice * t), hi = std::min(num_out, lo + slice);
      if (hi > lo)
        kernels.matmul_for(DType::kF32)
            .f32(w.data() + lo * num_in, x.data(), y.data() + size_t(t * num_tokens * slice), hi - lo, num_in,
                 num_tokens);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rep > 0) best_s = std::min(best_s, s);
  }
  return 2.0 * double(num_out) * double(num_in) * double(num_tokens) / best_s / 1e9;
}

}  // namespace pagoda::bench
