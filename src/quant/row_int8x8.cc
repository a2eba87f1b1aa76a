// Repacking INT8 rows into INT8x8 and INT8x16 groups: a byte permutation, so it loses nothing.
#include "quant/row_int8x8.h"

#include <cstring>

#include "core/check.h"
#include "quant/row_interleave.h"

namespace pagoda::quant {

namespace {

template <int64_t kRows>
void repack(const void* src, void* dst, int64_t num_rows, int64_t num_in) {
  PAGODA_CHECK(num_rows % kRows == 0 && num_in % 4 == 0,
               "repacking INT8 needs whole groups of {} rows and rows of whole 4-value words, got {} x {}", kRows,
               num_rows, num_in);
  const int64_t row_bytes = int8_row_bytes(num_in);
  for (int64_t g = 0; g < num_rows / kRows; ++g) {
    auto* out = static_cast<uint8_t*>(dst) + g * kRows * row_bytes;
    for (int64_t r = 0; r < kRows; ++r) {
      const auto* row = static_cast<const uint8_t*>(src) + (g * kRows + r) * row_bytes;
      std::memcpy(out + r * kInt8RowHeaderBytes, row, kInt8RowHeaderBytes);
      const uint8_t* values = row + kInt8RowHeaderBytes;
      uint8_t* words = out + kRows * kInt8RowHeaderBytes;
      interleave_row_words(values, words, r, num_in / 4, kRows);
    }
  }
}

}  // namespace

void repack_int8x8(const void* src, void* dst, int64_t num_rows, int64_t num_in) {
  repack<kInt8x8Rows>(src, dst, num_rows, num_in);
}
void repack_int8x16(const void* src, void* dst, int64_t num_rows, int64_t num_in) {
  repack<kInt8x16Rows>(src, dst, num_rows, num_in);
}

}  // namespace pagoda::quant
