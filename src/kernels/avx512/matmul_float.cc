// AVX-512 matmul for f32, f16 and bf16 weights: each weight row loaded once per group of up to eight tokens (four for
// f16), a few rows summed side by side on 16 lanes, the row tail through masked loads, 16 rows' sums reduced together.
// bf16 weights are widened to f32 exactly (a shift); avx512/bf16/ replaces that with vdpbf16ps where the CPU has
// AVX512-BF16.
#include <immintrin.h>

#include <cstring>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx512 {
namespace {

struct LoadF32 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(w) + k);
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const float*>(w) + k; }
};
struct LoadF16 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(w) + k));
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};
struct LoadBF16 {
  static __m512 load(const void* w, int64_t k, __mmask16 m) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(w) + k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
  static const void* address(const void* w, int64_t k) { return static_cast<const uint16_t*>(w) + k; }
};

// in[0..kRows) (each token's) folded from level kLevel up until one register a token is left, into out.
template <int kTokens, int kRows, int kLevel>
__attribute__((always_inline)) inline void fold_block(__m512 (&in)[kRows][kTokens], __m512 (&out)[kTokens]) {
  if constexpr (kRows == 1) {
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) out[t] = in[0][t];
  } else {
    __m512 next[kRows / 2][kTokens];
#pragma GCC unroll 8
    for (int r = 0; r < kRows / 2; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) next[r][t] = fold_rows<kLevel>(in[2 * r][t], in[2 * r + 1][t]);
    fold_block<kTokens, kRows / 2, kLevel + 1>(next, out);
  }
}

// Rows summed side by side (log2) for kTokens tokens: their accumulators, kTokens x vectors and a weight vector fit
// the 32 zmm registers. The fastest of 1 to 16 rows for each token count on the bundled model's shapes (64 x 64,
// 172 x 64, 64 x 172).
template <int kTokens>
inline constexpr int kRowsLog2 = kTokens == 1   ? 2
                                 : kTokens <= 3 ? 3
                                 : kTokens <= 6 ? 2
                                                : 1;

// out[t] = rows r0 .. r0 + 2^kLevel - 1 of the 16-row group at o0 folded to level kLevel, for token t. A block of
// 2^kRowsLog2 rows runs the inputs' loop once, each x vector loaded once for all its rows and each row's loop free of
// the tail's mask and the row count's branch (a row a loop spent most of its instructions there at 64 inputs); rows
// from nr on repeat row nr - 1, whose lanes the caller drops (lane k of every fold is row k's alone).
template <class Load, int kTokens, int kLevel>
__attribute__((always_inline)) inline void fold_tree(const void* w, const float* x, int64_t x_stride, int64_t num_in,
                                                     int64_t o0, int r0, int nr, __m512 (&out)[kTokens]) {
  if constexpr (kLevel <= kRowsLog2<kTokens>) {
    constexpr int kRows = 1 << kLevel;
    __m512 acc[kRows][kTokens];
    const void* row[kRows];
#pragma GCC unroll 16
    for (int r = 0; r < kRows; ++r) {
      row[r] = Load::address(w, (o0 + (r0 + r < nr ? r0 + r : nr - 1)) * num_in);
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 16 <= num_in; i += 16) {
      __m512 xv[kTokens];
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm512_loadu_ps(x + t * x_stride + i));
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        // Measured from the block's last row, so the distance is ahead of everything the block reads.
        if (i % 32 == 0) prefetch_weights_ahead<kTokens>(Load::address(row[r], i + (kRows - 1) * num_in));
        const __m512 wv = in_register(Load::load(row[r], i, __mmask16(0xffff)));
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
      }
    }
    if (i < num_in) {
      const __mmask16 m = __mmask16((1u << (num_in - i)) - 1);
      __m512 xv[kTokens];
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) xv[t] = in_register(_mm512_maskz_loadu_ps(m, x + t * x_stride + i));
#pragma GCC unroll 16
      for (int r = 0; r < kRows; ++r) {
        const __m512 wv = in_register(Load::load(row[r], i, m));
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
      }
    }
    fold_block<kTokens, kRows, 1>(acc, out);
  } else {
    __m512 a[kTokens], b[kTokens];
    fold_tree<Load, kTokens, kLevel - 1>(w, x, x_stride, num_in, o0, r0, nr, a);
    fold_tree<Load, kTokens, kLevel - 1>(w, x, x_stride, num_in, o0, r0 + (1 << (kLevel - 1)), nr, b);
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) out[t] = fold_rows<kLevel>(a[t], b[t]);
  }
}

// y[t * num_out + o0 + r] = row o0 + r . token t for r < nr (<= 16, >= 1) and t < kTokens (x_stride floats apart).
// Each (row, token) sums its products in one register, 16 inputs a vector in order; the 16 registers of a token's
// rows then reduce together in transpose_sum16's tree, folded as blocks of rows finish (about 3 instructions a row
// where a reduction of its own took 8 on a chain of dependent adds). A row's sum is the same bits whatever the tokens
// beside it and however many rows a block has. On the bundled model's f32 matmuls this beats one row at a time for
// every token count (measured: see the commit that introduced it).
template <class Load, int kTokens>
inline void rows_times_tokens(const void* w, const float* x, int64_t x_stride, float* y, int64_t num_out,
                              int64_t num_in, int64_t o0, int nr) {
  __m512 sums[kTokens];
  fold_tree<Load, kTokens, 4>(w, x, x_stride, num_in, o0, 0, nr, sums);
  const __mmask16 rows = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
#pragma GCC unroll 8
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * num_out + o0, rows, sums[t]);
}

// One token's rows one at a time, each summed from start to end with the tail masked in the loop: one long row after
// another streams from memory as decode reads it (on long rows such as TinyLlama's f16 ones this reads faster than
// the row blocks above). The same bits as rows_times_tokens.
template <class Load>
void streamed_rows_times_token(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in) {
  for (int64_t o0 = 0; o0 < num_out; o0 += 16) {
    const int nr = num_out - o0 < 16 ? int(num_out - o0) : 16;
    __m512 sums[16];
    for (int r = 0; r < 16; ++r) {
      __m512 acc = _mm512_setzero_ps();
      const int64_t row_offset = (o0 + (r < nr ? r : nr - 1)) * num_in;
      for (int64_t i = 0; i < num_in; i += 16) {
        const __mmask16 m = num_in - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (num_in - i)) - 1);
        if (i % 32 == 0) prefetch_weights_ahead<1>(Load::address(w, row_offset + i));
        acc = _mm512_fmadd_ps(Load::load(w, row_offset + i, m), _mm512_maskz_loadu_ps(m, x + i), acc);
      }
      sums[r] = acc;
    }
    const __mmask16 rows = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
    _mm512_mask_storeu_ps(y + o0, rows, transpose_sum16(sums));
  }
}

// Up to kTokenGroup tokens per pass over the weights (one read of each row for a decode step's speculative tokens).
template <class Load, int kTokens>
void tokens_pass(const void* w, const float* x, int64_t x_stride, float* y, int64_t num_out, int64_t num_in) {
  if (kTokens == 1 && num_in >= 1024) return streamed_rows_times_token<Load>(w, x, y, num_out, num_in);
  for (int64_t o = 0; o < num_out; o += 16)
    rows_times_tokens<Load, kTokens>(w, x, x_stride, y, num_out, num_in, o, num_out - o < 16 ? int(num_out - o) : 16);
}

// kGroup tokens per pass over the weights.
template <class Load, int kGroup = kTokenGroup>
void matmul_any(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  static_assert(kGroup >= 1 && kGroup <= 8, "the switch below has passes of 1 to 8 tokens");
  // Three or more tokens of 1024 or more inputs read from a copy whose rows lie a cache line off a multiple of 4 KiB
  // apart: rows of 1024 or 2048 f32 put every token's same offset in one L1 set, and with the weights' lines they
  // overflowed its ways (the copy is what lets this kernel clearly beat the avx2 level's on such rows). Short rows,
  // as the bundled model's, need no copy.
  int64_t x_stride = num_in;
  if (num_tokens > 2 && num_in >= 1024) {
    x_stride = (num_in + 15) / 16 * 16 + 16;
    auto* copy = static_cast<float*>(packed_activation_scratch(num_tokens * x_stride * int64_t(sizeof(float))));
    for (int64_t t = 0; t < num_tokens; ++t) std::memcpy(copy + t * x_stride, x + t * num_in, size_t(num_in) * 4);
    x = copy;
  }
  for (int64_t t = 0; t < num_tokens; t += kGroup) {
    const float* xt = x + t * x_stride;
    float* yt = y + t * num_out;
    switch (num_tokens - t >= kGroup ? kGroup : num_tokens - t) {
      case 1: tokens_pass<Load, 1>(w, xt, x_stride, yt, num_out, num_in); break;
      case 2: tokens_pass<Load, 2>(w, xt, x_stride, yt, num_out, num_in); break;
      case 3: tokens_pass<Load, 3>(w, xt, x_stride, yt, num_out, num_in); break;
      case 4: tokens_pass<Load, 4>(w, xt, x_stride, yt, num_out, num_in); break;
      case 5: tokens_pass<Load, 5>(w, xt, x_stride, yt, num_out, num_in); break;
      case 6: tokens_pass<Load, 6>(w, xt, x_stride, yt, num_out, num_in); break;
      case 7: tokens_pass<Load, 7>(w, xt, x_stride, yt, num_out, num_in); break;
      default: tokens_pass<Load, 8>(w, xt, x_stride, yt, num_out, num_in); break;
    }
  }
}

}  // namespace

// Prefill-sized calls take the tiled GEMMs (matmul_float_tiled.cc for f32, matmul_half_tiled.cc for f16 and bf16),
// which read each weight once per call or per block of tokens rather than once per pass of a few; they give a token
// the same bits.
void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  if (num_tokens >= kTiledMinTokens) return matmul_f32_tiled(w, x, y, num_out, num_in, num_tokens);
  matmul_any<LoadF32>(w, x, y, num_out, num_in, num_tokens);
}
// f16 weights four tokens a pass: eight tokens' f32 rows of 2048 (64 KiB) overflow L1 and each weight's fmas wait on
// L2; four fit, and four a pass ran faster than eight (and than the avx2 level's kernel). A decode step's
// speculative tokens then take two passes (still cheaper than one pass of up to eight, computed from the kernel's
// rates, not measured on a model).
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  if (num_tokens >= kTiledMinTokens) return matmul_f16_tiled(w, x, y, num_out, num_in, num_tokens);
  matmul_any<LoadF16, 4>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  if (num_tokens >= kTiledMinTokens) return matmul_bf16_tiled(w, x, y, num_out, num_in, num_tokens);
  matmul_any<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx512
