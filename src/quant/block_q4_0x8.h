// BlockQ4_0x8: eight rows' Q4_0 blocks of the same 32 columns, interleaved so that one 32-byte load holds four
// values of each of the eight rows (an in-memory layout made at load time, never written to a file). The AVX2
// matmul then gets one row per 32-bit lane straight from maddubs/madd, with no horizontal sums, and applies the
// eight rows' scales with one vector multiply (kernels/avx2/matmul_q4_0x8.cc). Same size as eight BlockQ4_0, so
// a row-major matrix of groups has the same row_bytes, and row o (o a multiple of 8) starts where it did.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_q4_0.h"

namespace pagoda::quant {

struct BlockQ4_0x8 {
  static constexpr int64_t kNumRows = 8;
  static constexpr int64_t kNumValues = 32;  // columns per block, as BlockQ4_0
  uint16_t d[kNumRows];                      // fp16 scale of each row
  // Word L (0..3, 32 bytes each), byte 4r + j (r < 8, j < 4) = row r's BlockQ4_0::qs[4L + j]: its low nibble is
  // row r's element 4L + j, its high nibble element 16 + 4L + j; value = (nibble - 8) * d[r].
  uint8_t qs[kNumRows * kNumValues / 2];
};
static_assert(sizeof(BlockQ4_0x8) == 8 * sizeof(BlockQ4_0), "a group is as big as its eight plain blocks");
static_assert(std::is_standard_layout_v<BlockQ4_0x8> && std::is_trivially_copyable_v<BlockQ4_0x8>);

// src: Q4_0 [num_rows, num_blocks] row-major -> dst: [num_rows / 8, num_blocks] groups; num_rows a multiple of 8.
void repack_q4_0x8(const BlockQ4_0* src, BlockQ4_0x8* dst, int64_t num_rows, int64_t num_blocks);
// Row r (< 8) of one group's block, back as the plain block it came from.
BlockQ4_0 unpack_q4_0x8_row(const BlockQ4_0x8& group, int64_t r);

}  // namespace pagoda::quant
