// SseDataReader: splits a Server-Sent Events byte stream, fed in arbitrary pieces, into the payloads of its
// "data:" lines (one payload per line; other fields and comments are ignored). Owns only the unfinished line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::bench {

class SseDataReader {
 public:
  // The payloads of the data lines that `bytes` completes, in order ("\n" or "\r\n" ends a line).
  std::vector<std::string> feed(std::string_view bytes);

 private:
  std::string partial_line_;
};

}  // namespace pagoda::bench
