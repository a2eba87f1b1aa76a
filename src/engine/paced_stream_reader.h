// PacedStreamReader: one consumer's reading of a RequestStream, for a consumer that can take its outputs a
// little late (a terminal printing a story). While outputs come less than `period` apart it looks once a period,
// sleeping rather than waiting on the stream, so the engine's push finds no waiter to wake (a futex call and an
// interrupt to another core each, a large share of a small model's decode step); when
// they come slower it blocks on the stream as next() does, so a slow model costs it no idle wake-ups either.
// Owns no thread; one consumer (not thread-safe); the stream must outlive it.
#pragma once

#include <chrono>

#include "engine/request_stream.h"

namespace pagoda {

class PacedStreamReader {
 public:
  PacedStreamReader(RequestStream& stream, std::chrono::microseconds period) : stream_(stream), period_(period) {}

  // The next output, in order; blocks until there is one.
  RequestOutput next();
  // Whether the last outputs came faster than the period (the reader then polls).
  bool polling() const { return polling_; }

 private:
  RequestStream& stream_;
  std::chrono::microseconds period_;
  bool polling_ = false;
  std::chrono::steady_clock::time_point last_output_ = std::chrono::steady_clock::now();
};

}  // namespace pagoda
