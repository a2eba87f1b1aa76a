// x8_prefetch: where the 8-row interleaved matmuls' software prefetch (kernels/x8_matmul_driver.h) reaches. A V of
// several row groups reads one stream per group slot: slot g of row vector p is group kGroups p + g, whose blocks
// lie one group's bytes apart from the next slot's, and the next row vector's slot g follows it. A unit's prefetch
// window, a fixed distance ahead of its block in that stream, can run past its group's end; there it belongs to the
// same slot of a following vector, not to the next group in memory (the next slot's, already being read). Plain
// C++ with no intrinsics, so the tests can check it; it computes addresses only and issues nothing.
#pragma once

#include <algorithm>
#include <cstdint>

namespace pagoda::kernels {

// The window of block_bytes that starts `ahead` bytes past the start of unit `unit` of its group (group_bytes long,
// `groups` groups per vector), in that group's stream. Its first `split` bytes lie `jump_before` bytes past where
// plain memory order would put them (the block's address + ahead + offset), the rest `jump_after` bytes past.
// block_bytes <= group_bytes, so a window spans at most two vectors.
struct X8PrefetchWindow {
  int64_t split = 0;
  int64_t jump_before = 0;
  int64_t jump_after = 0;
};

constexpr X8PrefetchWindow x8_prefetch_window(int64_t group_bytes, int64_t block_bytes, int64_t unit, int groups,
                                              int64_t ahead) {
  if (groups == 1) return {block_bytes, 0, 0};                            // one stream: memory order
  const int64_t start = unit * block_bytes + ahead;                       // from the start of this group, in its stream
  const int64_t vectors = start < group_bytes ? 0 : start / group_bytes;  // whole vectors ahead
  const int64_t gap = (groups - 1) * group_bytes;  // the other slots' groups between two of this slot's
  return {std::min((vectors + 1) * group_bytes - start, block_bytes), vectors * gap, (vectors + 1) * gap};
}

}  // namespace pagoda::kernels
