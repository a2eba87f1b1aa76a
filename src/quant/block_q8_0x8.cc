// Repacking Q8_0 rows into BlockQ8_0x8 / x16 groups and back: a byte permutation, so it loses nothing.
#include "quant/block_q8_0x8.h"

#include "core/check.h"
#include "quant/row_interleave.h"

namespace pagoda::quant {

namespace {

template <int64_t kRows>
void repack(const BlockQ8_0* src, BlockQ8_0Rows<kRows>* dst, int64_t num_rows, int64_t num_blocks) {
  PAGODA_CHECK(num_rows % kRows == 0, "repacking Q8_0 needs whole groups of {} rows, got {}", kRows, num_rows);
  for (int64_t g = 0; g < num_rows / kRows; ++g) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      BlockQ8_0Rows<kRows>& out = dst[g * num_blocks + b];
      for (int64_t r = 0; r < kRows; ++r) {
        const BlockQ8_0& in = src[(g * kRows + r) * num_blocks + b];
        out.d[r] = in.d;
        interleave_row_words(in.qs, reinterpret_cast<uint8_t*>(out.qs), r, 8, kRows);
      }
    }
  }
}

template <int64_t kRows>
BlockQ8_0 unpack_row(const BlockQ8_0Rows<kRows>& group, int64_t r) {
  BlockQ8_0 out{};
  out.d = group.d[r];
  gather_row_words(reinterpret_cast<const uint8_t*>(group.qs), out.qs, r, 8, kRows);
  return out;
}

}  // namespace

void repack_q8_0x8(const BlockQ8_0* src, BlockQ8_0x8* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
void repack_q8_0x16(const BlockQ8_0* src, BlockQ8_0x16* dst, int64_t num_rows, int64_t num_blocks) {
  repack(src, dst, num_rows, num_blocks);
}
BlockQ8_0 unpack_q8_0x8_row(const BlockQ8_0x8& group, int64_t r) { return unpack_row(group, r); }
BlockQ8_0 unpack_q8_0x16_row(const BlockQ8_0x16& group, int64_t r) { return unpack_row(group, r); }

}  // namespace pagoda::quant
