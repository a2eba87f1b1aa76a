// AVX-512 prefill GEMM for f16 and bf16 weights (the bf16 one for CPUs without AVX512-BF16): the tokens in
// blocks whose f32 activations stay in L2, and within a block, per group of 16 rows, tiles of 4 rows x up to 6 tokens
// that run over the whole input (24 accumulators, 6 x vectors and a weight vector: 31 of the 32 zmm registers), the
// next group's weights prefetched into L2 as they run. The
// weights are read straight from the matrix and widened in the loop (f16 by F16C, bf16 by a shift: both exact), so
// nothing is copied per call (f32 weights, twice the bytes, run faster from matmul_float_tiled.cc's panel). Each (row, token) sums its products on 16 lanes in input order, the tail masked, and a
// token's 16 rows reduce through transpose_sum16: the order of matmul_float.cc's passes, so a token's result is the
// bits it gets alone (speculative verification relies on it). Owns only this tiling; the decode-sized passes stay in
// matmul_float.cc.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"

namespace pagoda::kernels::avx512 {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;
// Tokens per block: the weights are read from memory once per block, the block's activations (768 KiB at 2048
// inputs) from L2 and L3 once per group of 16 rows.
constexpr int64_t kBlockTokens = 96;

struct LoadF16 {
  using Elem = uint16_t;
  static __m512 load(const uint16_t* row, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i)));
  }
  static __m512 load(const uint16_t* row, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + i));
  }
};
struct LoadBF16 {
  using Elem = uint16_t;
  static __m512 widen(__m256i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16)); }
  static __m512 load(const uint16_t* row, int64_t i) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + i)));
  }
  static __m512 load(const uint16_t* row, int64_t i, __mmask16 m) { return widen(_mm256_maskz_loadu_epi16(m, row + i)); }
};

// sums[t][r0 + r] = rows[r0 + r] . token t for r < 4 and t < kTokens (x_stride floats apart), over the whole input;
// meanwhile num_in bytes from next into L2, this tile's share of the next group's rows (see tiled_matmul).
template <class Load, int kTokens>
__attribute__((always_inline)) inline void tile(const typename Load::Elem* const* rows, const float* x,
                                                int64_t x_stride, int64_t num_in, __m512 (*sums)[16], int r0,
                                                const char* next) {
  __m512 acc[kTileRows][kTokens];
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
  const typename Load::Elem* row[kTileRows];
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r) row[r] = rows[r0 + r];
  int64_t i = 0;
  const int64_t whole_end = num_in / 16 * 16;
  for (; i < whole_end; i += 16) {
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm512_loadu_ps(x + t * x_stride + i));
    _mm_prefetch(next + i, _MM_HINT_T1);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = in_register(Load::load(row[r], i));
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (i < num_in) {  // the row's tail: weights and x masked, as the decode passes load them
    const __mmask16 m = __mmask16((1u << (num_in - i)) - 1);
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x + t * x_stride + i);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = Load::load(row[r], i, m);
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) sums[t][r0 + r] = acc[r][t];
}

// y[t * num_out + o0 + r] for kTokens tokens at x and the group's first nr rows (rows padded to whole tiles by
// repeats, whose lanes are dropped).
template <class Load, int kTokens>
void tokens_times_rows(const typename Load::Elem* const* rows, const float* x, float* y, int64_t num_out,
                       int64_t num_in, int64_t o0, int nr, const char* next) {
  alignas(64) __m512 sums[kTokens][16];
  for (int t = 0; t < kTokens; ++t)
    for (int r = 0; r < 16; ++r) sums[t][r] = _mm512_setzero_ps();
  for (int r0 = 0; r0 < nr; r0 += kTileRows)
    tile<Load, kTokens>(rows, x, num_in, num_in, sums, r0, next + r0 / kTileRows * num_in);
  const __mmask16 keep = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * num_out + o0, keep, transpose_sum16(sums[t]));
}

template <class Load>
void tiled_matmul(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const auto* weights = static_cast<const typename Load::Elem*>(w);
  for (int64_t b0 = 0; b0 < num_tokens; b0 += kBlockTokens) {
    const int64_t b1 = std::min(b0 + kBlockTokens, num_tokens);
    for (int64_t o0 = 0; o0 < num_out; o0 += 16) {
      const int nr = num_out - o0 < 16 ? int(num_out - o0) : 16;
      const typename Load::Elem* rows[16];
      for (int r = 0; r < 16; ++r) rows[r] = weights + (o0 + std::min(r, nr - 1)) * num_in;
      // The next group's 16 rows (after the last group, the first one's, which the next block reads first) are
      // num_in * 32 bytes: the first 8 token tiles' 4 row tiles each bring a 32nd of them into L2, so the group
      // after this one finds its weights there instead of waiting on memory.
      const int64_t next_o = o0 + 16 < num_out ? o0 + 16 : 0;
      const char* next = reinterpret_cast<const char*>(weights + next_o * num_in);
      for (int64_t t = b0; t < b1; t += kTileTokens) {
        const float* xt = x + t * num_in;
        const char* next_t = next + (t - b0) / kTileTokens % 8 * 4 * num_in;
        float* yt = y + t * num_out;
        switch (std::min<int64_t>(kTileTokens, b1 - t)) {
          case 1: tokens_times_rows<Load, 1>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
          case 2: tokens_times_rows<Load, 2>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
          case 3: tokens_times_rows<Load, 3>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
          case 4: tokens_times_rows<Load, 4>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
          case 5: tokens_times_rows<Load, 5>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
          default: tokens_times_rows<Load, 6>(rows, xt, yt, num_out, num_in, o0, nr, next_t); break;
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

}  // namespace pagoda::kernels::avx512
