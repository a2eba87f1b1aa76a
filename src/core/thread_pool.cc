// ThreadPool: spin-then-sleep workers over an atomic generation counter.
#include "core/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "core/check.h"

namespace pagoda {
namespace {

// How long an idle worker polls before it sleeps: long enough to cover the gap between two ops of a forward
// pass, short enough that an idle process goes quiet at once.
constexpr auto kSpinTime = std::chrono::microseconds(2000);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

int32_t ThreadPool::num_cores() { return int32_t(std::max(1u, std::thread::hardware_concurrency())); }

ThreadPool::ThreadPool(int32_t num_threads) : num_threads_(num_threads <= 0 ? num_cores() : num_threads) {
  PAGODA_CHECK(num_threads_ >= 1 && num_threads_ <= 1024, "bad thread count {}", num_threads_);
  workers_.reserve(size_t(num_threads_ - 1));
  for (int32_t i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_job(void* ctx, JobFn fn) {
  if (num_threads_ == 1) {
    fn(ctx, 0);
    return;
  }
  job_ctx_ = ctx;
  job_fn_ = fn;
  num_pending_.store(num_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0);
  // Spin (the usual wait is a fraction of a microsecond), but yield now and then so a worker that was
  // descheduled (more threads than free cores) gets the core back instead of stalling a whole timeslice.
  for (int32_t polls = 1; num_pending_.load(std::memory_order_acquire) != 0; ++polls) {
    cpu_relax();
    if (polls % 256 == 0) std::this_thread::yield();
  }
}

void ThreadPool::worker_loop(int32_t thread_idx) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for new work, then sleep until the generation changes.
    uint64_t gen = generation_.load(std::memory_order_acquire);
    if (gen == seen) {
      const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
      int32_t polls = 0;
      while ((gen = generation_.load(std::memory_order_acquire)) == seen) {
        cpu_relax();
        if (++polls % 1024 == 0 && std::chrono::steady_clock::now() > spin_until) {
          generation_.wait(seen, std::memory_order_acquire);
        }
      }
    }
    seen = gen;
    if (stopping_.load(std::memory_order_relaxed)) return;
    job_fn_(job_ctx_, thread_idx);
    num_pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace pagoda
