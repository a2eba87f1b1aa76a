// The byte shuffle every row-interleaved layout shares (block_q4_0x8, block_q8_0x8, block_awq_int4x8, row_int8x8 and
// their 16-row twins): a row's values, 4 bytes at a time, go to word L of its group of R rows at offset 4 R L + 4 r,
// so one 4R-byte load (32 bytes for 8 rows, 64 for 16) holds 4 bytes of each of the R rows. Plain copies; no layout
// knowledge beyond that.
#pragma once

#include <cstdint>
#include <cstring>

namespace pagoda::quant {

// num_words 4-byte words of row r (< num_rows) from `row` into the group's word array `words`.
inline void interleave_row_words(const void* row, uint8_t* words, int64_t r, int64_t num_words, int64_t num_rows) {
  for (int64_t word = 0; word < num_words; ++word)
    std::memcpy(words + 4 * num_rows * word + 4 * r, static_cast<const uint8_t*>(row) + 4 * word, 4);
}

// The inverse: row r's num_words words from `words` back into `row`.
inline void gather_row_words(const uint8_t* words, void* row, int64_t r, int64_t num_words, int64_t num_rows) {
  for (int64_t word = 0; word < num_words; ++word)
    std::memcpy(static_cast<uint8_t*>(row) + 4 * word, words + 4 * num_rows * word + 4 * r, 4);
}

}  // namespace pagoda::quant
