// RequestStream: the channel from the engine thread to one request's consumer. The engine pushes outputs; the
// consumer (an HTTP handler, a benchmark, a test) pops them in order, blocking with a timeout, or registers a
// listener that is told after each push and pops without blocking (the server: no thread waits per stream).
// Thread-safe; shared by the engine and the handle, so either side may go away first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
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
  // The next output if one is waiting; never blocks.
  std::optional<RequestOutput> try_next();
  // Called (on the pushing thread, outside the stream's lock) after every push, and once at once when outputs
  // are already waiting. It must be cheap and must not block: post the work elsewhere.
  void set_listener(std::function<void()> listener);
  // Blocks until the finished output arrives and returns every output not yet taken merged into one (all
  // tokens, text, logprobs and logits, the final counts and timing).
  RequestOutput wait_all();
  bool finished() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;  // an output was pushed
  std::condition_variable done_;   // the finished output was pushed
  std::deque<RequestOutput> outputs_;
  bool finished_ = false;                                  // the finished output was pushed
  std::shared_ptr<const std::function<void()>> listener_;  // copied out under the lock, called outside it
};

struct RequestHandle {
  RequestId id = -1;
  std::shared_ptr<RequestStream> stream;
};

}  // namespace pagoda
