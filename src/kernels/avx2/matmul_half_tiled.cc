// AVX2 prefill GEMM for f16 (F16C) and bf16 (shift) weights: the tokens in blocks whose f32 activations stay in L2,
// and within a block, per group of 15 rows, tiles of 3 rows x up to 3 tokens over the inputs' whole vectors (9
// accumulators, 3 x vectors, a weight vector and the widening's temporaries in the 16 ymm registers; 4 x 3 spilled an
// accumulator), the weights widened in the loop. Each
// (row, token) sums its products on 8 lanes in input order, reduces them in hsum's order and adds the row's tail one
// fma at a time: matmul.cc's order, so a token's result is the bits it gets alone (speculative verification relies on
// it). Owns only this tiling; the decode-sized passes stay in matmul.cc.
#include <algorithm>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"

namespace pagoda::kernels::avx2 {
namespace {

constexpr int kTileRows = 3;
constexpr int kTileTokens = 3;
constexpr int kGroupRows = 15;
// 48 tokens of 2048 f32 are 384 KiB, inside a 1 MiB L2 (and most of a 512 KiB one) while every row group passes over
// them; the weights are read once per block.
constexpr int64_t kBlockTokens = 48;

// Scalar tail loads defined here, not taken from core/half.h (matmul.cc says why).
struct LoadF16 {
  static __m256 load8(const uint16_t* row, int64_t i) { return load_f16x8(row + i); }
  static float load1(const uint16_t* row, int64_t i) { return _cvtsh_ss(row[i]); }
};
struct LoadBF16 {
  static __m256 load8(const uint16_t* row, int64_t i) { return load_bf16x8(row + i); }
  static float load1(const uint16_t* row, int64_t i) {
    const uint32_t bits = uint32_t(row[i]) << 16;
    float f;
    __builtin_memcpy(&f, &bits, 4);
    return f;
  }
};

// v, kept in a register (GCC would otherwise fold a loaded vector into each FMA as a memory operand).
inline __m256 in_register(__m256 v) {
  __asm__("" : "+x"(v));
  return v;
}

// y[t * num_out + o] for the tile's rows (row[r] is output o0 + r; only the first nr written) and kTokens tokens.
template <class Load, int kTokens>
__attribute__((always_inline)) inline void tile(const uint16_t* const* row, const float* x, float* y,
                                                int64_t num_out, int64_t num_in, int64_t o0, int nr) {
  __m256 acc[kTileRows][kTokens];
#pragma GCC unroll 3
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 3
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  const int64_t num_vec = num_in / 8 * 8;
  for (int64_t i = 0; i < num_vec; i += 8) {
    __m256 xv[kTokens];
#pragma GCC unroll 3
    for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm256_loadu_ps(x + t * num_in + i));
#pragma GCC unroll 3
    for (int r = 0; r < kTileRows; ++r) {
      const __m256 wv = in_register(Load::load8(row[r], i));
#pragma GCC unroll 3
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < nr; ++r)
    for (int t = 0; t < kTokens; ++t) {
      float s = hsum(acc[r][t]);
      for (int64_t i = num_vec; i < num_in; ++i) s = __builtin_fmaf(Load::load1(row[r], i), x[t * num_in + i], s);
      y[t * num_out + o0 + r] = s;
    }
}

template <class Load, int kTokens>
void tokens_times_group(const uint16_t* const* rows, const float* x, float* y, int64_t num_out, int64_t num_in,
                        int64_t o0, int nr) {
  for (int r0 = 0; r0 < nr; r0 += kTileRows)
    tile<Load, kTokens>(rows + r0, x, y, num_out, num_in, o0 + r0, std::min(kTileRows, nr - r0));
}

template <class Load>
void tiled_matmul(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const auto* weights = static_cast<const uint16_t*>(w);
  for (int64_t b0 = 0; b0 < num_tokens; b0 += kBlockTokens) {
    const int64_t b1 = std::min(b0 + kBlockTokens, num_tokens);
    for (int64_t o0 = 0; o0 < num_out; o0 += kGroupRows) {
      const int nr = int(std::min<int64_t>(kGroupRows, num_out - o0));
      // Rows from nr on repeat the last one, so every tile is whole; their results are not written.
      const uint16_t* rows[kGroupRows + kTileRows];
      for (int r = 0; r < kGroupRows + kTileRows; ++r) rows[r] = weights + (o0 + std::min(r, nr - 1)) * num_in;
      for (int64_t t = b0; t < b1; t += kTileTokens) {
        const float* xt = x + t * num_in;
        float* yt = y + t * num_out;
        switch (std::min<int64_t>(kTileTokens, b1 - t)) {
          case 1: tokens_times_group<Load, 1>(rows, xt, yt, num_out, num_in, o0, nr); break;
          case 2: tokens_times_group<Load, 2>(rows, xt, yt, num_out, num_in, o0, nr); break;
          default: tokens_times_group<Load, 3>(rows, xt, yt, num_out, num_in, o0, nr); break;
        }
      }
    }
  }
}

}  // namespace

void matmul_f16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  tiled_matmul<LoadF16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  tiled_matmul<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx2
