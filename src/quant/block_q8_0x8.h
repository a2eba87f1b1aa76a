// BlockQ8_0x8 and BlockQ8_0x16: eight (sixteen) rows' Q8_0 blocks of the same 32 columns, interleaved so that one
// 32-byte (64-byte) load holds four values of each of the rows (an in-memory layout made at load time, never
// written to a file), as BlockQ4_0x8 does for Q4_0 (kernels/avx2/matmul_q8_0x8.cc, avx512/matmul_q8_0x16.cc). Same
// size as its plain blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_q8_0.h"

namespace pagoda::quant {

template <int64_t kRows>
struct BlockQ8_0Rows {
  static constexpr int64_t kNumRows = kRows;
  static constexpr int64_t kNumValues = 32;  // columns per block, as BlockQ8_0
  uint16_t d[kNumRows];                      // fp16 scale of each row
  // Word L (0..7, 4 kRows bytes each), byte 4r + j (r < kRows, j < 4) = row r's element 4L + j; value = q * d[r].
  int8_t qs[kNumRows * kNumValues];
};
using BlockQ8_0x8 = BlockQ8_0Rows<8>;
using BlockQ8_0x16 = BlockQ8_0Rows<16>;
static_assert(sizeof(BlockQ8_0x8) == 8 * sizeof(BlockQ8_0), "a group is as big as its eight plain blocks");
static_assert(sizeof(BlockQ8_0x16) == 16 * sizeof(BlockQ8_0), "a group is as big as its sixteen plain blocks");
static_assert(std::is_standard_layout_v<BlockQ8_0x16> && std::is_trivially_copyable_v<BlockQ8_0x16>);

// src: Q8_0 [num_rows, num_blocks] row-major -> dst: [num_rows / R, num_blocks] groups; num_rows a multiple of R.
void repack_q8_0x8(const BlockQ8_0* src, BlockQ8_0x8* dst, int64_t num_rows, int64_t num_blocks);
void repack_q8_0x16(const BlockQ8_0* src, BlockQ8_0x16* dst, int64_t num_rows, int64_t num_blocks);
// Row r (< R) of one group's block, back as the plain block it came from.
BlockQ8_0 unpack_q8_0x8_row(const BlockQ8_0x8& group, int64_t r);
BlockQ8_0 unpack_q8_0x16_row(const BlockQ8_0x16& group, int64_t r);

}  // namespace pagoda::quant
