// Repacking Q8_0 rows into BlockQ8_0x8 groups and back: a byte permutation, so it loses nothing.
#include "quant/block_q8_0x8.h"

#include "core/check.h"
#include "quant/row_interleave.h"

namespace pagoda::quant {

void repack_q8_0x8(const BlockQ8_0* src, BlockQ8_0x8* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % BlockQ8_0x8::kNumRows == 0, "repack_q8_0x8 needs whole groups of 8 rows, got {}", num_rows);
  for (int64_t g = 0; g < num_rows / BlockQ8_0x8::kNumRows; ++g) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      BlockQ8_0x8& out = dst[g * num_blocks + b];
      for (int64_t r = 0; r < BlockQ8_0x8::kNumRows; ++r) {
        const BlockQ8_0& in = src[(g * BlockQ8_0x8::kNumRows + r) * num_blocks + b];
        out.d[r] = in.d;
        interleave_row_words(in.qs, reinterpret_cast<uint8_t*>(out.qs), r, 8);
      }
    }
  }
}

BlockQ8_0 unpack_q8_0x8_row(const BlockQ8_0x8& group, int64_t r) {
  BlockQ8_0 out{};
  out.d = group.d[r];
  gather_row_words(reinterpret_cast<const uint8_t*>(group.qs), out.qs, r, 8);
  return out;
}

}  // namespace pagoda::quant
