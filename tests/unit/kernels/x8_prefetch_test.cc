// x8_prefetch_window: every line a unit's prefetch names is the byte its slot's stream reaches `ahead` bytes later
// (the same slot of the following row vectors past its group's end, never the next slot's group), for one and two
// groups per vector, groups longer and shorter than the distance, and the 8-row K-quant blocks' sizes.
#include "kernels/x8_prefetch.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pagoda::kernels {
namespace {

struct Shape {
  int64_t block_bytes;
  int64_t num_units;
};

// The memory address (from the first group's start) of byte `pos` of slot g's stream, whose vector p holds group
// groups * p + g.
int64_t stream_address(int64_t pos, int g, int groups, int64_t group_bytes) {
  return (groups * (pos / group_bytes) + g) * group_bytes + pos % group_bytes;
}

TEST(X8PrefetchTest, WindowFollowsEachSlotsStream) {
  constexpr int64_t kAhead = 4096;
  // Q6_Kx8 over 2560 and 256 columns, Q4_Kx8 over 2048 and 11008, Q2_Kx8 over 1024 (a group shorter than kAhead).
  const Shape shapes[] = {{1680, 10}, {1680, 1}, {1184, 8}, {1184, 43}, {672, 4}};
  for (const Shape& shape : shapes) {
    const int64_t group_bytes = shape.block_bytes * shape.num_units;
    for (int groups = 1; groups <= 2; ++groups) {
      for (int64_t p = 0; p < 3; ++p) {
        for (int64_t u = 0; u < shape.num_units; ++u) {
          const X8PrefetchWindow w = x8_prefetch_window(group_bytes, shape.block_bytes, u, groups, kAhead);
          ASSERT_GE(w.split, 1);
          ASSERT_LE(w.split, shape.block_bytes);
          for (int g = 0; g < groups; ++g) {
            const int64_t block = (groups * p + g) * group_bytes + u * shape.block_bytes;
            for (int64_t offset = 0; offset < shape.block_bytes; offset += 64) {
              const int64_t named = block + kAhead + offset + (offset < w.split ? w.jump_before : w.jump_after);
              const int64_t pos = p * group_bytes + u * shape.block_bytes + kAhead + offset;
              ASSERT_EQ(named, stream_address(pos, g, groups, group_bytes))
                  << "block " << shape.block_bytes << " x " << shape.num_units << ", groups " << groups << ", p " << p
                  << ", unit " << u << ", slot " << g << ", offset " << offset;
              if (groups == 1) ASSERT_EQ(named, block + kAhead + offset);  // one stream: plain memory order
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
