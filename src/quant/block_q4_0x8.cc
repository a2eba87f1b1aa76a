// Repacking Q4_0 rows into BlockQ4_0x8 groups and back: a byte permutation, so it loses nothing.
#include "quant/block_q4_0x8.h"

#include <cstring>

#include "core/check.h"

namespace pagoda::quant {

void repack_q4_0x8(const BlockQ4_0* src, BlockQ4_0x8* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % BlockQ4_0x8::kNumRows == 0, "repack_q4_0x8 needs whole groups of 8 rows, got {}", num_rows);
  for (int64_t g = 0; g < num_rows / BlockQ4_0x8::kNumRows; ++g) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      BlockQ4_0x8& out = dst[g * num_blocks + b];
      for (int64_t r = 0; r < BlockQ4_0x8::kNumRows; ++r) {
        const BlockQ4_0& in = src[(g * BlockQ4_0x8::kNumRows + r) * num_blocks + b];
        out.d[r] = in.d;
        for (int64_t word = 0; word < 4; ++word) std::memcpy(out.qs + 32 * word + 4 * r, in.qs + 4 * word, 4);
      }
    }
  }
}

BlockQ4_0 unpack_q4_0x8_row(const BlockQ4_0x8& group, int64_t r) {
  BlockQ4_0 out{};
  out.d = group.d[r];
  for (int64_t word = 0; word < 4; ++word) std::memcpy(out.qs + 4 * word, group.qs + 32 * word + 4 * r, 4);
  return out;
}

}  // namespace pagoda::quant
