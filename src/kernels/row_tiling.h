// The loop order shared by the SIMD quantized matmuls: output rows (or groups of interleaved rows) in tiles whose
// weights fit in a quarter of a 512 KiB L2, and inside a tile the tokens in groups of kGroup (plus one narrower
// group for the ones left over), so prefill reads each weight row from DRAM once while every token group passes
// over the tile, and each weight block is unpacked once per group. Plain C++ with no intrinsics: every instruction
// set's folder includes it, and each instantiation takes that file's own (internal-linkage) kernel lambda.
#pragma once

#include <cstdint>

namespace pagoda::kernels {

inline constexpr int64_t kTileBytes = 128 * 1024;

namespace detail {
// Calls row_kernel.template operator()<k>(o, t) with k = num_left (1..kMax) as a compile-time constant.
template <int kMax, class RowKernel>
inline void call_with_token_count(int64_t num_left, int64_t o, int64_t t, const RowKernel& row_kernel) {
  if constexpr (kMax >= 1) {
    if (num_left == kMax)
      row_kernel.template operator()<kMax>(o, t);
    else
      call_with_token_count<kMax - 1>(num_left, o, t, row_kernel);
  }
}
}  // namespace detail

// Calls row_kernel.template operator()<kTokens>(o, t) for every output row o < num_out and every token group
// [t, t + kTokens), kTokens in 1..kGroup; the kernel computes row o for those tokens.
template <int kGroup = 4, class RowKernel>
inline void for_each_row_and_token_group(int64_t row_bytes, int64_t num_out, int64_t num_tokens,
                                         const RowKernel& row_kernel) {
  const int64_t rows_per_tile = row_bytes >= kTileBytes ? 1 : kTileBytes / row_bytes;
  for (int64_t o_begin = 0; o_begin < num_out; o_begin += rows_per_tile) {
    const int64_t o_end = o_begin + rows_per_tile < num_out ? o_begin + rows_per_tile : num_out;
    int64_t t = 0;
    for (; t + kGroup <= num_tokens; t += kGroup)
      for (int64_t o = o_begin; o < o_end; ++o) row_kernel.template operator()<kGroup>(o, t);
    if (t < num_tokens)
      for (int64_t o = o_begin; o < o_end; ++o)
        detail::call_with_token_count<kGroup - 1>(num_tokens - t, o, t, row_kernel);
  }
}

}  // namespace pagoda::kernels
