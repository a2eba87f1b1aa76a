// Progress: the stderr progress display of long-running subcommands. On a terminal it redraws one bar line;
// otherwise (CI, a pipe) it prints a plain line at each tenth of the work, so logs stay short.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::cli {

class Progress {
 public:
  explicit Progress(std::string stage);
  void update(int64_t done, int64_t total, const std::string& item);
  void finish();  // ends the bar's line (terminal) or prints a final "done" line

 private:
  std::string stage_;
  bool is_terminal_;
  int32_t last_tenth_ = -1;
  bool finished_ = false;
};

}  // namespace pagoda::cli
