// StopChecker: finds stop strings in a stream of decoded text. Holds back the tail that could still be the
// start of a stop string, so no text past a stop string is ever emitted; the stop string itself is dropped
// (as OpenAI's API does). Owns only that tail.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stop_strings);

  struct Output {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string was found; nothing after it may be emitted
  };
  Output push(std::string_view text);
  // At the end of generation: the held-back tail (it was no stop string after all).
  std::string flush();
  bool stopped() const { return stopped_; }                // a stop string was found
  const std::string& matched() const { return matched_; }  // which one (empty until then)

 private:
  std::vector<std::string> stop_strings_;
  size_t max_stop_len_ = 0;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace pagoda
