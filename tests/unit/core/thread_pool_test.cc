// ThreadPool: every thread runs each job once, parallel_for covers its range exactly once, and pools start,
// go idle (sleep) and shut down without hanging.
#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace pagoda {
namespace {

TEST(ThreadPoolTest, RunCallsEveryThreadOnce) {
  for (int32_t num_threads : {1, 2, 3, 5}) {
    ThreadPool pool(num_threads);
    ASSERT_EQ(pool.num_threads(), num_threads);
    std::vector<std::atomic<int32_t>> calls(static_cast<size_t>(num_threads));
    pool.run([&](int32_t thread_idx) { calls[size_t(thread_idx)].fetch_add(1); });
    for (auto& c : calls) EXPECT_EQ(c.load(), 1);
  }
}

TEST(ThreadPoolTest, ParallelForCoversTheRangeOnceInGrainAlignedPieces) {
  ThreadPool pool(3);
  for (int64_t n : {1, 7, 16, 17, 100, 1001}) {
    for (int64_t grain : {1, 4, 16}) {
      std::vector<std::atomic<int32_t>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
        EXPECT_EQ(begin % grain, 0);
        EXPECT_LT(begin, end);
        for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "n=" << n << " grain=" << grain;
    }
  }
}

TEST(ThreadPoolTest, ManySmallJobsInARow) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int32_t job = 0; job < 20000; ++job) pool.run([&](int32_t thread_idx) { sum.fetch_add(thread_idx + 1); });
  EXPECT_EQ(sum.load(), 20000 * (1 + 2));
}

TEST(ThreadPoolTest, WorkersWakeFromSleepAndShutDown) {
  ThreadPool pool(2);
  std::atomic<int32_t> calls{0};
  pool.run([&](int32_t) { calls.fetch_add(1); });
  // Past the spin time the worker sleeps on the atomic; the next job must wake it.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  pool.run([&](int32_t) { calls.fetch_add(1); });
  EXPECT_EQ(calls.load(), 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // The destructor then wakes the sleeping worker to stop it (a hang would time the test out).
}

TEST(ThreadPoolTest, ZeroMeansOnePerCore) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.num_threads(), ThreadPool::num_cores());
}

}  // namespace
}  // namespace pagoda
