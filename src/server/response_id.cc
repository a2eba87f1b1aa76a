// unique_id: one atomic counter and one random salt for every id the server makes.
#include "server/response_id.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <random>

namespace pagoda::server {

std::string unique_id(std::string_view prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  const uint64_t n = counter.fetch_add(1);
  return fmt::format("{}{:016x}{:08x}", prefix, salt ^ (n * 0x9E3779B97F4A7C15ull), uint32_t(n));
}

}  // namespace pagoda::server
