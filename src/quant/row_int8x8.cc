// Repacking INT8 rows into INT8x8 groups: a byte permutation, so it loses nothing.
#include "quant/row_int8x8.h"

#include <cstring>

#include "core/check.h"
#include "quant/row_interleave.h"

namespace pagoda::quant {

void repack_int8x8(const void* src, void* dst, int64_t num_rows, int64_t num_in) {
  PAGODA_CHECK(num_rows % kInt8x8Rows == 0 && num_in % 4 == 0,
               "repack_int8x8 needs whole groups of 8 rows and rows of whole 4-value words, got {} x {}", num_rows,
               num_in);
  const int64_t row_bytes = int8_row_bytes(num_in);
  for (int64_t g = 0; g < num_rows / kInt8x8Rows; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * int8x8_group_bytes(num_in);
    for (int64_t r = 0; r < kInt8x8Rows; ++r) {
      const auto* row = static_cast<const uint8_t*>(src) + (g * kInt8x8Rows + r) * row_bytes;
      std::memcpy(out + r * kInt8RowHeaderBytes, row, kInt8RowHeaderBytes);
      const uint8_t* values = row + kInt8RowHeaderBytes;
      uint8_t* words = out + kInt8x8Rows * kInt8RowHeaderBytes;
      interleave_row_words(values, words, r, num_in / 4, kInt8x8Rows);
    }
  }
}

}  // namespace pagoda::quant
