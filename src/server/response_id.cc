// IdGenerator: one counter and one salt for every id a server makes.
#include "server/response_id.h"

#include <fmt/format.h>

#include <random>

namespace pagoda::server {

IdGenerator::IdGenerator() : salt_(std::random_device{}()) {}

std::string IdGenerator::next(std::string_view prefix) {
  const uint64_t n = counter_.fetch_add(1);
  return fmt::format("{}{:016x}{:08x}", prefix, salt_ ^ (n * 0x9E3779B97F4A7C15ull), uint32_t(n));
}

}  // namespace pagoda::server
