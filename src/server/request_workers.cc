// RequestWorkers: a bounded queue served by a few threads.
#include "server/request_workers.h"

#include <algorithm>

namespace pagoda::server {

RequestWorkers::RequestWorkers(int num_threads, size_t max_queued) : max_queued_(max_queued) {
  for (int i = 0; i < std::max(1, num_threads); ++i) threads_.emplace_back([this] { loop(); });
}

RequestWorkers::~RequestWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

bool RequestWorkers::try_post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

size_t RequestWorkers::num_queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

void RequestWorkers::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      task();
    } catch (...) {
      // The tasks catch their own errors and answer their requests; this only keeps the worker alive.
    }
  }
}

}  // namespace pagoda::server
