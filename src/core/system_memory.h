// available_ram_bytes: how much memory the system can give this process now (MemAvailable in /proc/meminfo), for
// sizing decisions made at start-up (the KV pool, whether repacked weights fit). Reads /proc; holds no state.
#pragma once

#include <cstdint>
#include <optional>

namespace pagoda {

// nullopt when /proc/meminfo cannot be read or has no MemAvailable line.
std::optional<int64_t> available_ram_bytes();

}  // namespace pagoda
