// BlockAwqInt4x8: eight rows' AWQ INT4 values of the same 32 columns, interleaved as BlockQ4_0x8 interleaves Q4_0
// (an in-memory layout made at load time, never written to a file), with each row's group scale and zero point
// repeated for every 32 columns, so one layout and one kernel serve groups of 32, 64 and 128
// (kernels/avx2/matmul_awq_int4x8.cc). 19 bytes per row per 32 values (the file's: 20, 18, 17).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace pagoda::quant {

struct BlockAwqInt4x8 {
  static constexpr int64_t kNumRows = 8;
  static constexpr int64_t kNumValues = 32;  // columns per block
  uint16_t d[kNumRows];                      // fp16 scale of each row's group
  uint8_t zero[kNumRows];                    // zero point z (0..15) of each row's group
  // Word L (0..3), byte 4r + j = row r's nibbles of values 4L + j (low) and 16 + 4L + j (high); value = (q - z) d.
  uint8_t qs[kNumRows * kNumValues / 2];
};
static_assert(sizeof(BlockAwqInt4x8) == 152, "8 scales, 8 zero points, 128 bytes of nibbles, unpadded");
static_assert(std::is_standard_layout_v<BlockAwqInt4x8> && std::is_trivially_copyable_v<BlockAwqInt4x8>);

// src: AWQ INT4 rows of num_in values in groups of `group` (quant/block_awq_int4.h) -> dst: [num_rows / 8,
// num_in / 32] blocks; num_rows a multiple of 8.
void repack_awq_int4x8(const void* src, BlockAwqInt4x8* dst, int64_t num_rows, int64_t num_in, int64_t group);

}  // namespace pagoda::quant
