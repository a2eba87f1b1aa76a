// The KV block sizes pagoda accepts, checked in one place by every entry (the config file, the flags, the
// engine's public API): a power of two in [1, kMaxBlockSize] (positions map to blocks by shift and mask).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda {

inline constexpr int32_t kMaxBlockSize = 1024;

constexpr bool is_valid_block_size(int64_t b) { return b >= 1 && b <= kMaxBlockSize && (b & (b - 1)) == 0; }

// "`name` must be a power of two in [1, 1024], got `b`": the message for whoever refuses one.
inline std::string block_size_error(std::string_view name, int64_t b) {
  return fmt::format("{} must be a power of two in [1, {}], got {}", name, kMaxBlockSize, b);
}

}  // namespace pagoda
