// StopChecker: byte-level stop-string matching over a text stream. held_ is always text that no stop string
// has completed in yet and that could still be the start of one; everything before it has been emitted.
#include "engine/stop_checker.h"

#include <algorithm>

#include "core/check.h"

namespace pagoda {

StopChecker::StopChecker(std::vector<std::string> stop_strings) : stop_strings_(std::move(stop_strings)) {
  for (const std::string& stop : stop_strings_) {
    // SamplingParams::validate rejects empty stop strings; one here would match before any text.
    PAGODA_CHECK(!stop.empty(), "empty stop string (SamplingParams::validate should have rejected it)");
    max_stop_len_ = std::max(max_stop_len_, stop.size());
  }
}

StopChecker::Output StopChecker::push(std::string_view text) {
  Output out;
  if (stopped_) return out;
  if (stop_strings_.empty()) {
    out.text = text;
    return out;
  }
  held_.append(text);

  // The match that completes first wins (ties: the one starting first, i.e. the longer). That is what a
  // stream pushed one byte at a time would find, so the result does not depend on how text is chunked:
  // with stops "abcd" and "bc", "abcd" stops after "a" whether it arrives whole or byte by byte.
  size_t best_start = std::string::npos;
  size_t best_end = std::string::npos;
  const std::string* best = nullptr;
  for (const std::string& stop : stop_strings_) {
    const size_t start = held_.find(stop);
    if (start == std::string::npos) continue;
    const size_t end = start + stop.size();
    if (end < best_end || (end == best_end && start < best_start)) {
      best_start = start;
      best_end = end;
      best = &stop;
    }
  }
  if (best_start != std::string::npos) {
    out.text = held_.substr(0, best_start);
    out.stopped = true;
    stopped_ = true;
    matched_ = *best;
    held_.clear();
    return out;
  }

  // Hold back the longest tail that is a proper prefix of some stop string (a full one would have matched).
  size_t num_held = 0;
  for (size_t len = std::min(held_.size(), max_stop_len_ - 1); len > 0 && num_held == 0; --len) {
    const std::string_view tail = std::string_view(held_).substr(held_.size() - len);
    for (const std::string& stop : stop_strings_) {
      if (stop.size() > len && std::string_view(stop).starts_with(tail)) {
        num_held = len;
        break;
      }
    }
  }
  out.text = held_.substr(0, held_.size() - num_held);
  held_.erase(0, held_.size() - num_held);
  return out;
}

std::string StopChecker::flush() {
  std::string tail;
  tail.swap(held_);
  return tail;
}

}  // namespace pagoda
