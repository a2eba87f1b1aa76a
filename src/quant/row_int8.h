// INT8 per-channel weights and per-token activations: one symmetric scale per row (max|x| / 127, so the
// largest magnitude maps to +-127 and zero stays exactly zero) and int8 values. A weight row is stored as
// its f32 scale followed by its int8 values, so every row is self-contained (row o of a [num_out, num_in]
// matrix starts at o * int8_row_bytes(num_in)) and a thread can take any slice of the rows. The row length
// need not be a multiple of anything. The rounding here is the one every kernel must reproduce bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda::quant {

// Longest row: |sum of num_in products of two int8 in [-127, 127]| <= 127^2 * num_in must fit in the int32 that
// the matmul kernels accumulate in.
inline constexpr int64_t kMaxInt8RowLength = int64_t(1) << 17;

// Bytes before a row's values: its f32 scale.
inline constexpr int64_t kInt8RowHeaderBytes = 4;
inline constexpr int64_t int8_row_bytes(int64_t num_in) { return kInt8RowHeaderBytes + num_in; }

// The scale and values of a stored row (the scale is read with memcpy: rows are not 4-byte aligned when
// num_in is not a multiple of 4).
inline float int8_row_scale(const void* row) {
  float scale;
  std::memcpy(&scale, row, sizeof(scale));
  return scale;
}
inline const int8_t* int8_row_values(const void* row) { return static_cast<const int8_t*>(row) + kInt8RowHeaderBytes; }

// x: f32 [n] -> q: int8 [n]; returns the scale d = max|x| / 127, with q = round(x * (1 / d)) (half away from
// zero) saturated to [-127, 127], never -128. An all-zero row gets d = 0 and q = 0; nan becomes 0.
float quantize_int8_values(const float* x, int8_t* q, int64_t n);

// One weight row: x: f32 [num_in] -> row: int8_row_bytes(num_in) bytes (scale, then values).
void quantize_row_int8(const float* x, void* row, int64_t num_in);
// rows: num_rows stored rows -> y: f32 [num_rows, num_in].
void dequantize_rows_int8(const void* rows, float* y, int64_t num_rows, int64_t num_in);

}  // namespace pagoda::quant
