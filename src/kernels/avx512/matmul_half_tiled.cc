// AVX-512 prefill GEMM for f16 and bf16 weights (the bf16 one for CPUs without AVX512-BF16): the tokens in blocks
// whose f32 activations are first copied into a per-thread scratch, interleaved by tiles of 6 tokens (one
// contiguous stream a tile, no two tokens' rows in one L1 set); within a block, per pass of 16 or 32 rows, tiles of
// 4 rows x up to 6 tokens run over the whole input (24 accumulators, 6 x vectors and a weight vector: 31 of the 32
// zmm registers), the next pass's weights prefetched into L2 as they run. The weights are read straight from the
// matrix and widened in the loop (f16 by F16C, bf16 by a shift: both exact). Each (row, token) sums its products on
// 16 lanes in input order, the tail masked, and a token's 16 rows reduce through transpose_sum16's tree, a tile's 4
// rows folded as soon as the tile ends: the order of matmul_float.cc's passes, so a token's result is the bits it
// gets alone (speculative verification relies on it). Owns only this tiling; the decode-sized passes stay in
// matmul_float.cc.
#include <immintrin.h>

#include <algorithm>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx512 {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;

// Tokens per block and groups of 16 rows per pass over a block. The weights are read from memory once per block,
// the block's activations once per pass. 48 tokens whose activations fit in 512 KiB stay in the 1 MiB L2 beside a
// pass's weights; longer rows (TinyLlama's 5632-input w_down) cannot, so their blocks stream from L3 and instead
// grow to 96 tokens (the weights read half as often) with passes of 32 rows (the activations read half as often).
struct Blocking {
  int64_t tokens;
  int groups;
};
Blocking blocking_for(int64_t num_in) {
  if (48 * num_in * int64_t(sizeof(float)) <= 512 * 1024) return {48, 1};
  return {96, 2};
}

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

// folded[t] = transpose_sum16's second level over row[0..3] . token t for t < kTokens: lane (q, r) = row r's sum
// over quarter q of its 16 lanes. xp is the tile's packed activations (step s of token t at (s * kTokens + t) * 16
// floats, zeros past num_in); meanwhile num_in bytes from next into L2, this tile's share of the next pass's rows.
template <class Load, int kTokens>
__attribute__((always_inline)) inline void tile(const typename Load::Elem* const* row, const float* xp,
                                                int64_t num_in, const char* next, __m512 (&folded)[kTokens]) {
  __m512 acc[kTileRows][kTokens];
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
  int64_t i = 0;
  const int64_t whole_end = num_in / 16 * 16;
  for (; i < whole_end; i += 16) {
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm512_load_ps(xp + (i * kTokens + t * 16)));
    _mm_prefetch(next + i, _MM_HINT_T1);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = in_register(Load::load(row[r], i));
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (i < num_in) {  // the row's tail: weights masked (zeros), the packed x already zero there
    const __mmask16 m = __mmask16((1u << (num_in - i)) - 1);
    __m512 xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) xv[t] = _mm512_load_ps(xp + (i * kTokens + t * 16));
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 wv = Load::load(row[r], i, m);
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
#pragma GCC unroll 6
  for (int t = 0; t < kTokens; ++t)
    folded[t] = fold_rows<2>(fold_rows<1>(acc[0][t], acc[1][t]), fold_rows<1>(acc[2][t], acc[3][t]));
}

// y[t * num_out + o0 + r] for kTokens tokens at xp and the group's first nr rows (rows padded to whole tiles by
// repeats, whose lanes are dropped; a tile past nr is zeros, as transpose_sum16 would see it).
template <class Load, int kTokens>
void tokens_times_rows(const typename Load::Elem* const* rows, const float* xp, float* y, int64_t num_out,
                       int64_t num_in, int64_t o0, int nr, const char* next) {
  __m512 quarters[4][kTokens];
  for (int j = 0; j < 4; ++j) {
    if (j * kTileRows < nr) {
      tile<Load, kTokens>(rows + j * kTileRows, xp, num_in, next + j * num_in, quarters[j]);
    } else {
      for (int t = 0; t < kTokens; ++t) quarters[j][t] = _mm512_setzero_ps();
    }
  }
  const __mmask16 keep = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  for (int t = 0; t < kTokens; ++t)
    _mm512_mask_storeu_ps(y + t * num_out + o0, keep,
                          fold_rows<4>(fold_rows<3>(quarters[0][t], quarters[1][t]),
                                       fold_rows<3>(quarters[2][t], quarters[3][t])));
}

// Tokens [b0, b1) of x into out, tile j (tokens b0 + 6j ..) at out + j * tile_floats, its step s of token t at
// (s * n + t) * 16 floats (n the tile's tokens), zeros past num_in.
void pack_block(const float* x, int64_t num_in, int64_t b0, int64_t b1, int64_t tile_floats, float* out) {
  const int64_t num_steps = (num_in + 15) / 16;
  for (int64_t t0 = b0; t0 < b1; t0 += kTileTokens) {
    const int n = int(std::min<int64_t>(kTileTokens, b1 - t0));
    float* tile_out = out + (t0 - b0) / kTileTokens * tile_floats;
    for (int t = 0; t < n; ++t) {
      const float* row = x + (t0 + t) * num_in;
      for (int64_t s = 0; s < num_steps; ++s) {
        const int64_t i = s * 16;
        const __mmask16 m = num_in - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (num_in - i)) - 1);
        _mm512_store_ps(tile_out + (s * n + t) * 16, _mm512_maskz_loadu_ps(m, row + i));
      }
    }
  }
}

template <class Load>
void tiled_matmul(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const auto* weights = static_cast<const typename Load::Elem*>(w);
  const Blocking blocking = blocking_for(num_in);
  const int64_t pass_rows = 16 * blocking.groups;
  const int64_t tile_floats = (num_in + 15) / 16 * 16 * kTileTokens;
  const int64_t block_tiles = (std::min(num_tokens, blocking.tokens) + kTileTokens - 1) / kTileTokens;
  auto* xp = static_cast<float*>(packed_activation_scratch(block_tiles * tile_floats * int64_t(sizeof(float))));
  for (int64_t b0 = 0; b0 < num_tokens; b0 += blocking.tokens) {
    const int64_t b1 = std::min(b0 + blocking.tokens, num_tokens);
    pack_block(x, num_in, b0, b1, tile_floats, xp);
    for (int64_t p0 = 0; p0 < num_out; p0 += pass_rows) {
      // The next pass's rows (after the last pass, the first one's, which the next block reads first) are
      // pass_rows * num_in * 2 bytes: the first 8 token tiles' row tiles each bring their share into L2, so the
      // pass after this one finds its weights there instead of waiting on memory.
      const int64_t next_p = p0 + pass_rows < num_out ? p0 + pass_rows : 0;
      const char* next = reinterpret_cast<const char*>(weights + next_p * num_in);
      for (int64_t t = b0; t < b1; t += kTileTokens) {
        const float* xt = xp + (t - b0) / kTileTokens * tile_floats;
        float* yt = y + t * num_out;
        for (int g = 0; g < blocking.groups && p0 + 16 * g < num_out; ++g) {
          const int64_t o0 = p0 + 16 * g;
          const int nr = num_out - o0 < 16 ? int(num_out - o0) : 16;
          const typename Load::Elem* rows[16];
          for (int r = 0; r < 16; ++r) rows[r] = weights + (o0 + std::min(r, nr - 1)) * num_in;
          const char* next_t = next + ((t - b0) / kTileTokens % 8 * blocking.groups + g) * 4 * num_in;
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
}

}  // namespace

void matmul_f16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  tiled_matmul<LoadF16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16_tiled(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  tiled_matmul<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx512
