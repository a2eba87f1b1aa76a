// The INT8x16 W8A8 matmul over AMX tiles, written against a tile policy so that the same loops run on the hardware
// (amx/matmul_int8x16.cc: the _tile_* intrinsics) and on a plain C++ model of the tiles (tests/unit/kernels, which
// checks the loops bit for bit on CPUs without AMX). Tiles provides configure() (tiles 0-7: 16 rows of 64 bytes),
// release(), zero<T>(), load<T>(base, stride), store<T>(base, stride) and dpbssd<C, A, B>() with tdpbssd's meaning:
// C[m][n] += sum_k sum_{i<4} int8 A[m][4k + i] * int8 B[k][4n + i], int32 wrapping.
//
// An INT8x16 group's words are tdpbssd's B operand as they lie (word k: row n's values 4k..4k+3 at bytes 4n..4n+3),
// so a 16-row group's 64 inputs are one B tile loaded with a 64-byte stride; the A tile is 16 tokens' 64 activations.
// Each output is the exact int32 dot product, then float(isum) * (w_scale * x_scale): the plain INT8 kernel's bits.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/quant_matmul_support.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::detail {

inline constexpr int64_t kTileRows = 16;   // tokens per A tile, rows per B tile's group
inline constexpr int64_t kTileBytes = 64;  // bytes per tile row: 64 inputs of a token, 4 of each of 16 rows

// Tiles 0-3: C (token group i, row group j) at 2i + j; 4, 5: A of the two token groups; 6, 7: B of the two row groups.
template <class Tiles>
void matmul_int8x16_tiles(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                          int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in, quant::kInt8x16Rows);
  const int64_t k_blocks = (num_in + kTileBytes - 1) / kTileBytes;
  const int64_t padded_in = k_blocks * kTileBytes;
  // Tokens in pairs of 16-token groups, padded with zero activations (whose outputs are not written) and each row
  // padded with zeros to whole 64-byte blocks: every A tile is a plain load. In the per-thread packed scratch (no
  // std::vector here: inline library code compiled with -mamx/-mavx512 could be merged into callers on any CPU).
  const int64_t token_pairs = (num_tokens + 2 * kTileRows - 1) / (2 * kTileRows);
  const int64_t a_size = token_pairs * 2 * kTileRows * padded_in;
  auto* a_rows = static_cast<int8_t*>(packed_activation_scratch(a_size));
  std::memset(a_rows, 0, size_t(a_size));
  for (int64_t t = 0; t < num_tokens; ++t) std::memcpy(a_rows + t * padded_in, xq + t * num_in, size_t(num_in));

  const int64_t group_bytes = quant::int8x16_group_bytes(num_in);
  const int64_t num_groups = num_out / quant::kInt8x16Rows;
  const int64_t num_words = num_in / 4;
  const auto* groups = static_cast<const uint8_t*>(w);
  alignas(64) int8_t b_tail[2][kTileRows * kTileBytes];  // a last, partial block of words, zero-padded
  alignas(64) int32_t c[4][kTileRows][kTileRows];
  Tiles::configure();
  for (int64_t g = 0; g < num_groups; g += 2) {
    const bool two_groups = g + 1 < num_groups;
    const int8_t* b[2] = {quant::int8x16_values(groups + g * group_bytes),
                          quant::int8x16_values(groups + (two_groups ? g + 1 : g) * group_bytes)};
    const int64_t tail_words = num_words - (k_blocks - 1) * kTileRows;  // words in the last block, 1..16
    if (tail_words < kTileRows)
      for (int j = 0; j < 2; ++j) {
        std::memset(b_tail[j], 0, sizeof(b_tail[j]));
        std::memcpy(b_tail[j], b[j] + (k_blocks - 1) * kTileRows * kTileBytes, size_t(tail_words * kTileBytes));
      }
    for (int64_t tp = 0; tp < token_pairs; ++tp) {
      const int8_t* a = a_rows + tp * 2 * kTileRows * padded_in;
      Tiles::template zero<0>();
      Tiles::template zero<1>();
      Tiles::template zero<2>();
      Tiles::template zero<3>();
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        const bool tail = kb == k_blocks - 1 && tail_words < kTileRows;
        Tiles::template load<4>(a + kb * kTileBytes, padded_in);
        Tiles::template load<5>(a + kTileRows * padded_in + kb * kTileBytes, padded_in);
        Tiles::template load<6>(tail ? b_tail[0] : b[0] + kb * kTileRows * kTileBytes, kTileBytes);
        Tiles::template load<7>(tail ? b_tail[1] : b[1] + kb * kTileRows * kTileBytes, kTileBytes);
        Tiles::template dpbssd<0, 4, 6>();
        Tiles::template dpbssd<1, 4, 7>();
        Tiles::template dpbssd<2, 5, 6>();
        Tiles::template dpbssd<3, 5, 7>();
      }
      Tiles::template store<0>(c[0], kTileBytes);
      Tiles::template store<1>(c[1], kTileBytes);
      Tiles::template store<2>(c[2], kTileBytes);
      Tiles::template store<3>(c[3], kTileBytes);
      for (int i = 0; i < 2; ++i) {
        const int64_t t0 = (2 * tp + i) * kTileRows;
        const int64_t nt = num_tokens - t0 < kTileRows ? num_tokens - t0 : kTileRows;  // <= 0: a padding group
        for (int j = 0; j < (two_groups ? 2 : 1); ++j) {
          const float* w_scales = quant::int8x16_scales(groups + (g + j) * group_bytes);
          for (int64_t t = 0; t < nt; ++t) {
            float* out = y + (t0 + t) * y_stride + (g + j) * quant::kInt8x16Rows;
            for (int64_t r = 0; r < kTileRows; ++r)
              out[r] = float(c[2 * i + j][t][r]) * (w_scales[r] * x_scales[t0 + t]);
          }
        }
      }
    }
  }
  Tiles::release();
}

}  // namespace pagoda::kernels::detail
