// Progress: the stderr progress display of long-running subcommands. On a terminal it redraws one bar line;
// otherwise (CI, a pipe) it prints a plain line at each tenth of the work, so logs stay short.
#pragma once

#include <cstdint>
#include <string>

namespace pagoda::cli {

// What `done` and `total` count: items (shown as they are) or bytes (shown in MiB).
enum class ProgressUnit { kItems, kBytes };

class Progress {
 public:
  explicit Progress(std::string stage, ProgressUnit unit = ProgressUnit::kItems);
  void update(int64_t done, int64_t total, const std::string& item);
  void finish();  // ends the bar's line (terminal) or prints a final "done" line

 private:
  std::string amount(int64_t done, int64_t total) const;  // "3/21" or "1.5/20.0 MiB"

  std::string stage_;
  ProgressUnit unit_;
  bool is_terminal_;
  int32_t last_tenth_ = -1;
  bool finished_ = false;
};

}  // namespace pagoda::cli
