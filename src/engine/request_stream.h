// RequestStream: the channel from the engine thread to one request's consumer. The engine pushes outputs; the
// consumer (an HTTP handler, a benchmark, a test) pops them in order, blocking with a timeout. Thread-safe;
// shared by the engine and the handle, so either side may go away first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "engine/request_output.h"

namespace pagoda {

class RequestStream {
 public:
  void push(RequestOutput output);
  // The next output, waiting up to `timeout`; nullopt when none arrived in time.
  std::optional<RequestOutput> next(std::chrono::milliseconds timeout);
  // Blocks until the finished output arrives and returns every output merged into one (all tokens and text,
  // the final counts and timing).
  RequestOutput wait_all();
  bool finished() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestOutput> outputs_;
  bool finished_ = false;  // the finished output was pushed
};

struct RequestHandle {
  RequestId id = -1;
  std::shared_ptr<RequestStream> stream;
};

}  // namespace pagoda
