// RequestWorkers: a few threads that prepare API requests off the HTTP I/O threads (JSON parsing, the chat
// template, tokenization: milliseconds to seconds for a large body), so /health and /metrics, and every other
// connection's bytes, never wait behind them. A bounded queue: a full one refuses new work at once. Owns its
// threads; knows nothing of HTTP or the engine.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pagoda::server {

class RequestWorkers {
 public:
  RequestWorkers(int num_threads, size_t max_queued);
  // Runs what is queued, then joins.
  ~RequestWorkers();
  RequestWorkers(const RequestWorkers&) = delete;
  RequestWorkers& operator=(const RequestWorkers&) = delete;

  // Queues `task`; false (and `task` dropped) when max_queued tasks already wait. A task must not throw (an
  // escaping exception is caught and dropped, so the worker lives on).
  bool try_post(std::function<void()> task);
  size_t num_queued() const;

 private:
  void loop();

  const size_t max_queued_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace pagoda::server
