// ThreadPool: a fixed set of worker threads that run one parallel job at a time, the calling thread taking
// part as thread 0. Owned by the engine (the model owns no threads and only borrows a pool for a forward
// call). Workers spin briefly between jobs (a decode step issues hundreds of small jobs; waking a sleeping
// thread costs more than the job) and then sleep on an atomic wait, so an idle server burns no CPU.
// Invariant: at most one job runs at a time, and run() returns only after every thread finished it.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace pagoda {

class ThreadPool {
 public:
  // num_threads counts the caller: 1 means no workers (everything runs inline). 0 = one per core.
  explicit ThreadPool(int32_t num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return num_threads_; }
  // Jobs handed to the workers so far (each one a wake-up and a barrier); calls that ran inline, on a
  // one-thread pool or for a range within one grain, do not count. For measuring how many barriers a forward
  // pass costs.
  uint64_t num_jobs_dispatched() const { return generation_.load(std::memory_order_relaxed); }

  // Calls fn(thread_idx) once on each of the num_threads() threads and waits for all of them.
  // No allocation: `fn` is called through a plain pointer pair, so it must outlive the call (it does).
  template <class Fn>
  void run(Fn&& fn) {
    run_job(&fn, [](void* ctx, int32_t thread_idx) { (*static_cast<Fn*>(ctx))(thread_idx); });
  }

  // Splits [0, n) into one contiguous range per thread, each a multiple of `grain` except the last, and calls
  // fn(begin, end) for each non-empty range.
  template <class Fn>
  void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
    if (n <= 0) return;
    if (num_threads_ == 1 || n <= grain) {
      fn(int64_t(0), n);
      return;
    }
    const int64_t num_grains = (n + grain - 1) / grain;
    run([&](int32_t thread_idx) {
      const int64_t begin = num_grains * thread_idx / num_threads_ * grain;
      const int64_t end = std::min(n, num_grains * (thread_idx + 1) / num_threads_ * grain);
      if (begin < end) fn(begin, end);
    });
  }

  // The number of hardware threads, at least 1.
  static int32_t num_cores();

 private:
  using JobFn = void (*)(void* ctx, int32_t thread_idx);
  void run_job(void* ctx, JobFn fn);
  void worker_loop(int32_t thread_idx);

  int32_t num_threads_;
  std::vector<std::thread> workers_;
  // The current job; written by the caller before `generation_` is bumped, read by workers after.
  void* job_ctx_ = nullptr;
  JobFn job_fn_ = nullptr;
  std::atomic<uint64_t> generation_{0};  // bumped once per job; workers wait for it to change
  std::atomic<int32_t> num_pending_{0};  // workers still running the current job
  std::atomic<bool> stopping_{false};
};

}  // namespace pagoda
