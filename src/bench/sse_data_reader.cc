// SSE "data:" line splitting.
#include "bench/sse_data_reader.h"

namespace pagoda::bench {

std::vector<std::string> SseDataReader::feed(std::string_view bytes) {
  std::vector<std::string> payloads;
  for (char c : bytes) {
    if (c != '\n') {
      partial_line_.push_back(c);
      continue;
    }
    std::string_view line(partial_line_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.substr(0, 5) == "data:") {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      payloads.emplace_back(line);
    }
    partial_line_.clear();
  }
  return payloads;
}

}  // namespace pagoda::bench
