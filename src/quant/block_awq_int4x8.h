// BlockAwqInt4x8 (and x16, for 512-bit registers): eight (sixteen) rows' AWQ INT4 values of the same 32 columns,
// interleaved as BlockQ4_0x8 interleaves Q4_0 (an in-memory layout made at load time, never written to a file), with
// each row's group scale and zero point repeated for every 32 columns, so one layout and one kernel serve groups of 32,
// 64 and 128 (kernels/avx2/matmul_int4x8.cc). 19 bytes per row per 32 values (the file's: 20, 18, 17).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

template <int64_t kRows>
struct BlockAwqInt4Rows {
  static constexpr int64_t kNumRows = kRows;
  static constexpr int64_t kNumValues = 32;  // columns per block
  uint16_t d[kNumRows];                      // fp16 scale of each row's group
  uint8_t zero[kNumRows];                    // zero point z (0..15) of each row's group
  // Word L (0..3, 4 kRows bytes), byte 4r + j = row r's nibbles of values 4L + j (low) and 16 + 4L + j (high);
  // value = (q - z) d.
  uint8_t qs[kNumRows * kNumValues / 2];
};
using BlockAwqInt4x8 = BlockAwqInt4Rows<8>;
using BlockAwqInt4x16 = BlockAwqInt4Rows<16>;
static_assert(sizeof(BlockAwqInt4x8) == 152, "8 scales, 8 zero points, 128 bytes of nibbles, unpadded");
static_assert(sizeof(BlockAwqInt4x16) == 304, "16 scales, 16 zero points, 256 bytes of nibbles, unpadded");
static_assert(std::is_standard_layout_v<BlockAwqInt4x16> && std::is_trivially_copyable_v<BlockAwqInt4x16>);

// src: AWQ INT4 rows of num_in values in groups of `group` (quant/block_awq_int4.h) -> dst: [num_rows / R,
// num_in / 32] blocks; num_rows a multiple of R.
void repack_awq_int4x8(const void* src, BlockAwqInt4x8* dst, int64_t num_rows, int64_t num_in, int64_t group);
void repack_awq_int4x16(const void* src, BlockAwqInt4x16* dst, int64_t num_rows, int64_t num_in, int64_t group);

}  // namespace pagoda::quant
