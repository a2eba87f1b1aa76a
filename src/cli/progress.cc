// Progress bar or plain progress lines on stderr.
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace pagoda::cli {

Progress::Progress(std::string stage, ProgressUnit unit)
    : stage_(std::move(stage)), unit_(unit), is_terminal_(::isatty(2) == 1) {}

std::string Progress::amount(int64_t done, int64_t total) const {
  char text[64];
  if (unit_ == ProgressUnit::kBytes) {
    std::snprintf(text, sizeof text, "%.1f/%.1f MiB", double(done) / (1 << 20), double(total) / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%lld/%lld", static_cast<long long>(done), static_cast<long long>(total));
  }
  return text;
}

void Progress::update(int64_t done, int64_t total, const std::string& item) {
  if (total <= 0) return;
  if (is_terminal_) {
    constexpr int32_t kWidth = 30;
    const int32_t filled = int32_t(done * kWidth / total);
    std::fprintf(stderr, "\r%s [%.*s%*s] %s %-40.40s", stage_.c_str(), filled, "##############################",
                 kWidth - filled, "", amount(done, total).c_str(), item.c_str());
    std::fflush(stderr);
    return;
  }
  const int32_t tenth = int32_t(done * 10 / total);
  if (tenth != last_tenth_) {
    last_tenth_ = tenth;
    std::fprintf(stderr, "%s: %s (%d%%) %s\n", stage_.c_str(), amount(done, total).c_str(), tenth * 10,
                 item.c_str());
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (is_terminal_) std::fprintf(stderr, "\n");
}

}  // namespace pagoda::cli
