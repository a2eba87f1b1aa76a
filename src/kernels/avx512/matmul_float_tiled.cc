// AVX-512 prefill GEMM for f32 weights: each group of 16 rows is copied once into a per-thread f32 panel, then tiles of 4 rows x up to 6 tokens run over input chunks small enough that a
// tile's panel rows and tokens stay in L1, the 24 accumulators saved between chunks. Each (row, token) sums its
// products on 16 lanes in input order, the tail masked, and a token's 16 rows reduce through transpose_sum16: the
// order of matmul_float.cc's passes, so a token's result is the bits it gets alone (speculative verification relies
// on it). Owns only this tiling; the decode-sized passes stay in matmul_float.cc.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx512 {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;  // 24 accumulators, 6 x vectors and a weight vector: 31 of the 32 zmm registers
// Inputs per chunk: a tile's 4 panel rows and 6 tokens of 1024 f32 are 40 KiB, inside L1, and the tokens' part is
// read again by the group's next tiles. Shorter chunks (256) ran slower: more accumulator saves per FMA.
constexpr int64_t kChunk = 1024;

// sums[t][r0 + r] += rows r0 .. r0 + 3 of the panel . token t over inputs [k0, k1) (k1 < num_in only at chunk ends,
// which are whole vectors).
template <int kTokens>
__attribute__((always_inline)) inline void tile(const float* panel, int64_t panel_stride, const float* x,
                                                int64_t num_in, int64_t k0, int64_t k1, __m512 (*sums)[16], int r0) {
  __m512 acc[kTileRows][kTokens];
  const float* row[kTileRows];
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r) {
    row[r] = panel + (r0 + r) * panel_stride;
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) acc[r][t] = sums[t][r0 + r];
  }
  int64_t i = k0;
  const int64_t whole_end = std::min(k1, num_in / 16 * 16);
  for (; i < whole_end; i += 16) {
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm512_loadu_ps(x + t * num_in + i));
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = in_register(_mm512_load_ps(row[r] + i));
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (i < k1) {  // the row's tail: the panel holds zeros past num_in, x is masked
    const __mmask16 m = __mmask16((1u << (num_in - i)) - 1);
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + t * num_in + i);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = _mm512_maskz_load_ps(m, row[r] + i);
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) sums[t][r0 + r] = acc[r][t];
}

// y[t * num_out + o0 + r] for kTokens tokens at x and the panel's first nr rows.
template <int kTokens>
void tokens_times_panel(const float* panel, int64_t panel_stride, const float* x, float* y, int64_t num_out,
                        int64_t num_in, int64_t o0, int nr) {
  alignas(64) __m512 sums[kTokens][16];
  for (int t = 0; t < kTokens; ++t)
    for (int r = 0; r < 16; ++r) sums[t][r] = _mm512_setzero_ps();
  for (int64_t k0 = 0; k0 < num_in; k0 += kChunk) {
    const int64_t k1 = std::min(k0 + kChunk, num_in);
    for (int r0 = 0; r0 < nr; r0 += kTileRows) tile<kTokens>(panel, panel_stride, x, num_in, k0, k1, sums, r0);
  }
  const __mmask16 rows = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * num_out + o0, rows, transpose_sum16(sums[t]));
}

// A weight row as f32 in out[0 .. num_in), zeros after it up to the next 16.
struct WidenF32 {
  static void row(const void* w, int64_t o, int64_t num_in, float* out) {
    const float* row = static_cast<const float*>(w) + o * num_in;
    for (int64_t i = 0; i < num_in; i += 16) {
      const __mmask16 m = num_in - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (num_in - i)) - 1);
      _mm512_store_ps(out + i, _mm512_maskz_loadu_ps(m, row + i));
    }
  }
};

template <class Widen>
void tiled_matmul(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  // A line past a whole number of vectors, so the panel's rows do not all fall in one L1 set.
  const int64_t panel_stride = (num_in + 15) / 16 * 16 + 16;
  auto* panel = static_cast<float*>(packed_activation_scratch(16 * panel_stride * int64_t(sizeof(float))));
  for (int64_t o0 = 0; o0 < num_out; o0 += 16) {
    const int nr = num_out - o0 < 16 ? int(num_out - o0) : 16;
    // Whole tiles of 4 rows; a partial tile's extra rows repeat the last one (their lanes are dropped).
    const int tile_rows = (nr + kTileRows - 1) / kTileRows * kTileRows;
    for (int r = 0; r < tile_rows; ++r) Widen::row(w, o0 + std::min(r, nr - 1), num_in, panel + r * panel_stride);
    for (int64_t t = 0; t < num_tokens; t += kTileTokens) {
      const float* xt = x + t * num_in;
      float* yt = y + t * num_out;
      switch (std::min<int64_t>(kTileTokens, num_tokens - t)) {
        case 1: tokens_times_panel<1>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
        case 2: tokens_times_panel<2>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
        case 3: tokens_times_panel<3>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
        case 4: tokens_times_panel<4>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
        case 5: tokens_times_panel<5>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
        default: tokens_times_panel<6>(panel, panel_stride, xt, yt, num_out, num_in, o0, nr); break;
      }
    }
  }
}

}  // namespace

void matmul_f32_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  tiled_matmul<WidenF32>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx512
