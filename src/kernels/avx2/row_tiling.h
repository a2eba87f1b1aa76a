// The loop order shared by the AVX2 quantized matmuls: output rows in tiles whose weights fit in a quarter of a
// 512 KiB L2, and inside a tile the tokens in groups of four (plus one narrower group for the 1..3 left over), so
// prefill reads each weight row from DRAM once while every token group passes over the tile, and each weight
// block is unpacked once per group.
#pragma once

#include <cstdint>

namespace pagoda::kernels::avx2 {

inline constexpr int64_t kTileBytes = 128 * 1024;

// Calls row_kernel.template operator()<kTokens>(o, t) for every output row o < num_out and every token group
// [t, t + kTokens), kTokens in 1..4; the kernel computes row o for those tokens.
template <class RowKernel>
inline void for_each_row_and_token_group(int64_t row_bytes, int64_t num_out, int64_t num_tokens,
                                         const RowKernel& row_kernel) {
  const int64_t rows_per_tile = row_bytes >= kTileBytes ? 1 : kTileBytes / row_bytes;
  for (int64_t o_begin = 0; o_begin < num_out; o_begin += rows_per_tile) {
    const int64_t o_end = o_begin + rows_per_tile < num_out ? o_begin + rows_per_tile : num_out;
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4)
      for (int64_t o = o_begin; o < o_end; ++o) row_kernel.template operator()<4>(o, t);
    for (int64_t o = o_begin; o < o_end; ++o) {
      switch (num_tokens - t) {
        case 3: row_kernel.template operator()<3>(o, t); break;
        case 2: row_kernel.template operator()<2>(o, t); break;
        case 1: row_kernel.template operator()<1>(o, t); break;
        default: break;
      }
    }
  }
}

}  // namespace pagoda::kernels::avx2
