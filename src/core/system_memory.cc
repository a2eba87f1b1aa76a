// MemAvailable from /proc/meminfo.
#include "core/system_memory.h"

#include <cstdio>

namespace pagoda {

std::optional<int64_t> available_ram_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return std::nullopt;
  char line[256];
  std::optional<int64_t> bytes;
  long long kib = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr)
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) {
      bytes = int64_t(kib) * 1024;
      break;
    }
  std::fclose(f);
  return bytes;
}

}  // namespace pagoda
