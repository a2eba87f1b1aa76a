// Bandwidth kernels. Each thread touches (first-writes) its own slice, so pages sit near the thread that streams
// them, as in STREAM.
#include "bench/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>

namespace pagoda::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

MemoryBandwidth measure_memory_bandwidth(ThreadPool& pool, int64_t array_mib, int32_t num_reps) {
  const int64_t n = array_mib * (1 << 20) / int64_t(sizeof(double));
  constexpr int64_t kGrain = 4096;  // elements: page-sized slices keep threads on their own pages
  std::unique_ptr<double[]> a(new double[size_t(n)]), b(new double[size_t(n)]), c(new double[size_t(n)]);
  pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      a[i] = 1.0;
      b[i] = 2.0;
      c[i] = 0.0;
    }
  });

  double best_read = 1e30, best_triad = 1e30;
  std::atomic<uint64_t> sink{0};  // keeps the reads observable so the compiler cannot drop them
  for (int32_t rep = 0; rep < num_reps; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      // xor of the bit patterns: a one-cycle vector op, so the loop is bound by loads, not by an add chain.
      const uint64_t* bits = reinterpret_cast<const uint64_t*>(a.get());
      uint64_t x0 = 0, x1 = 0, x2 = 0, x3 = 0;
      int64_t i = begin;
      for (; i + 4 <= end; i += 4) {
        x0 ^= bits[i];
        x1 ^= bits[i + 1];
        x2 ^= bits[i + 2];
        x3 ^= bits[i + 3];
      }
      for (; i < end; ++i) x0 ^= bits[i];
      sink.fetch_xor(x0 ^ x1 ^ x2 ^ x3, std::memory_order_relaxed);
    });
    best_read = std::min(best_read, seconds_since(t0));

    t0 = std::chrono::steady_clock::now();
    const double s = 3.0;
    pool.parallel_for(n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
    });
    best_triad = std::min(best_triad, seconds_since(t0));
  }
  volatile uint64_t keep = sink.load();
  (void)keep;

  MemoryBandwidth result;
  result.array_bytes = n * int64_t(sizeof(double));
  result.num_threads = pool.num_threads();
  result.read_gbps = double(n) * 8.0 / best_read / 1e9;
  result.triad_gbps = double(n) * 24.0 / best_triad / 1e9;
  return result;
}

double read_bandwidth_gbps(int32_t num_threads) {
  ThreadPool pool(num_threads);
  return measure_memory_bandwidth(pool).read_gbps;
}

}  // namespace pagoda::bench
