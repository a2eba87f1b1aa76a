// ThreadPool: spin-then-sleep workers over an atomic generation counter.
#include "core/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "core/check.h"

namespace pagoda {
namespace {

// How long an idle worker polls before it sleeps: long enough to cover the gap between two ops of a forward
// pass, short enough that spinning threads do not eat the timeslices of the threads a job waits for when
// there are more threads than free cores (two 2-thread processes on 2 cores ran far slower with 2 ms).
constexpr auto kSpinTime = std::chrono::microseconds(100);
// How often the caller polls for the workers' completion before it sleeps on the counter (tens of us).
constexpr int32_t kCallerSpinPolls = 2000;

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
  // Spin briefly (the usual wait is a fraction of a microsecond), then sleep until the last worker's notify,
  // so a descheduled worker gets the core instead of the caller burning it.
  for (int32_t polls = 0;; ++polls) {
    const int32_t pending = num_pending_.load(std::memory_order_acquire);
    if (pending == 0) break;
    if (polls < kCallerSpinPolls)
      cpu_relax();
    else
      num_pending_.wait(pending, std::memory_order_acquire);
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
    // The last worker wakes the caller if it went to sleep (notify is cheap when nobody waits).
    if (num_pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) num_pending_.notify_one();
  }
}

}  // namespace pagoda
