// Progress bar or plain progress lines on stderr.
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace pagoda::cli {

Progress::Progress(std::string stage) : stage_(std::move(stage)), is_terminal_(::isatty(2) == 1) {}

void Progress::update(int64_t done, int64_t total, const std::string& item) {
  if (total <= 0) return;
  if (is_terminal_) {
    constexpr int32_t kWidth = 30;
    const int32_t filled = int32_t(done * kWidth / total);
    std::fprintf(stderr, "\r%s [%.*s%*s] %lld/%lld %-40.40s", stage_.c_str(), filled, "##############################",
                 kWidth - filled, "", static_cast<long long>(done), static_cast<long long>(total), item.c_str());
    std::fflush(stderr);
    return;
  }
  const int32_t tenth = int32_t(done * 10 / total);
  if (tenth != last_tenth_) {
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s: %lld/%lld (%d%%) %s\n", stage_.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), tenth * 10, item.c_str());
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (is_terminal_) std::fprintf(stderr, "\n");
}

}  // namespace pagoda::cli
