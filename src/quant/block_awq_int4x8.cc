// Repacking AWQ INT4 rows into BlockAwqInt4x8 blocks: each 32-value sub-block's nibbles move as Q4_0's do, and
// its group's scale and zero point are copied beside them.
#include "quant/block_awq_int4x8.h"

#include "core/check.h"
#include "quant/block_awq_int4.h"
#include "quant/row_interleave.h"

namespace pagoda::quant {
namespace {

template <int64_t kGroup, int64_t kRows>
void repack(const BlockAwqInt4<kGroup>* src, BlockAwqInt4Rows<kRows>* dst, int64_t num_rows, int64_t num_in) {
  const int64_t num_groups = num_in / kGroup, num_blocks = num_in / 32;
  for (int64_t g = 0; g < num_rows / kRows; ++g) {
    for (int64_t b = 0; b < num_blocks; ++b) {
      BlockAwqInt4Rows<kRows>& out = dst[g * num_blocks + b];
      for (int64_t r = 0; r < kRows; ++r) {
        const BlockAwqInt4<kGroup>& in = src[(g * kRows + r) * num_groups + b / (kGroup / 32)];
        const uint8_t* sub = in.qs + 16 * (b % (kGroup / 32));  // this 32-value sub-block's 16 bytes
        out.d[r] = in.d;
        out.zero[r] = in.zero;
        interleave_row_words(sub, out.qs, r, 4, kRows);
      }
    }
  }
}

template <int64_t kRows>
void repack_any_group(const void* src, BlockAwqInt4Rows<kRows>* dst, int64_t num_rows, int64_t num_in, int64_t group) {
  PAGODA_CHECK(num_rows % kRows == 0 && num_in % group == 0,
               "repacking AWQ INT4 into groups of {} rows: {} x {} in "
               "groups of {}",
               kRows, num_rows, num_in, group);
  switch (group) {
    case 32: repack(static_cast<const BlockAwqInt4G32*>(src), dst, num_rows, num_in); break;
    case 64: repack(static_cast<const BlockAwqInt4G64*>(src), dst, num_rows, num_in); break;
    case 128: repack(static_cast<const BlockAwqInt4G128*>(src), dst, num_rows, num_in); break;
    default: PAGODA_CHECK(false, "AWQ group {} (32, 64 or 128)", group);
  }
}

}  // namespace

void repack_awq_int4x8(const void* src, BlockAwqInt4x8* dst, int64_t num_rows, int64_t num_in, int64_t group) {
  repack_any_group(src, dst, num_rows, num_in, group);
}
void repack_awq_int4x16(const void* src, BlockAwqInt4x16* dst, int64_t num_rows, int64_t num_in, int64_t group) {
  repack_any_group(src, dst, num_rows, num_in, group);
}

}  // namespace pagoda::quant
