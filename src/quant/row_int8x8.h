// INT8x8: eight INT8 per-channel weight rows (quant/row_int8.h) interleaved so that one 32-byte load holds four
// values of each of the eight rows (an in-memory layout made at load time, never written to a file), as
// BlockQ8_0x8 does for Q8_0: a group is the eight f32 row scales, then word L (32 bytes) of byte 4r + j = row r's
// value 4L + j. The same bytes as the eight plain rows, so row o (o a multiple of 8) starts where it did.
#pragma once

#include <cstdint>

#include "quant/row_int8.h"

namespace pagoda::quant {

inline constexpr int64_t kInt8x8Rows = 8;
inline constexpr int64_t int8x8_group_bytes(int64_t num_in) { return kInt8x8Rows * int8_row_bytes(num_in); }
// The eight scales (f32, 4-byte aligned when the group is) and the interleaved values of a group.
inline const float* int8x8_scales(const void* group) { return static_cast<const float*>(group); }
inline const int8_t* int8x8_values(const void* group) {
  return static_cast<const int8_t*>(group) + kInt8x8Rows * kInt8RowHeaderBytes;
}

// src: num_rows plain rows of num_in values -> dst: num_rows / 8 groups; num_rows a multiple of 8 and num_in of 4.
void repack_int8x8(const void* src, void* dst, int64_t num_rows, int64_t num_in);

// INT8x16: the same with sixteen rows per group (64-byte words, for 512-bit registers): the 16 scales, then word L
// of byte 4r + j = row r's value 4L + j. A group is 64 + 16 num_in bytes, so with num_in a multiple of 4 every group
// (and its words) keeps the matrix's 64-byte alignment.
inline constexpr int64_t kInt8x16Rows = 16;
inline constexpr int64_t int8x16_group_bytes(int64_t num_in) { return kInt8x16Rows * int8_row_bytes(num_in); }
inline const float* int8x16_scales(const void* group) { return static_cast<const float*>(group); }
inline const int8_t* int8x16_values(const void* group) {
  return static_cast<const int8_t*>(group) + kInt8x16Rows * kInt8RowHeaderBytes;
}
void repack_int8x16(const void* src, void* dst, int64_t num_rows, int64_t num_in);

}  // namespace pagoda::quant
