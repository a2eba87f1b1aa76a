// PacedStreamReader: poll while outputs come fast, block once they come slower than twice the period.
#include "engine/paced_stream_reader.h"

#include <thread>

namespace pagoda {

RequestOutput PacedStreamReader::next() {
  for (;;) {
    std::optional<RequestOutput> out = polling_ ? stream_.try_next() : stream_.next(std::chrono::hours(24));
    const auto now = std::chrono::steady_clock::now();
    if (out) {
      polling_ = now - last_output_ < period_;
      last_output_ = now;
      return std::move(*out);
    }
    if (!polling_) continue;  // the day-long wait ran out
    if (now - last_output_ > 2 * period_) {
      polling_ = false;  // outputs slowed down: block for the next
      continue;
    }
    std::this_thread::sleep_for(period_);
  }
}

}  // namespace pagoda
