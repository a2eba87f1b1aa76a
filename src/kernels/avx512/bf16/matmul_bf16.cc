// AVX512-BF16 matmul for bf16 weights: the activations are rounded to bf16 once per call (round to nearest even,
// vcvtne2ps2bf16, as llama.cpp rounds them for its bf16 dot products), then vdpbf16ps multiplies 32 weight/activation
// pairs per instruction into 16 f32 lanes, twice the multiplies of an f32 fma and no widening of the weights. The
// rounded activations change results by up to about 2^-9 of each product (KernelTable's bf16 contract says so);
// ref/matmul_bf16_pairs.cc is this arithmetic in scalar code, the bits the tests ask of it. Tiles of 4 rows x up to 6
// tokens over the whole input; the tokens in blocks whose bf16 activations stay in L2 while every group of 16 rows
// passes over them. Each (row, token) sums in input order on 16 lanes and a token's 16 rows reduce through
// transpose_sum16, whatever the tile or block, so a token's result is the bits it gets alone. The 32-value steps start
// where the weights' 64-byte lines do (a GGUF aligns its tensors to 32 bytes only, and a vector load across two lines
// costs two), the activations shifted alike, the row's head and tail through masked loads; the lanes' pairs depend on
// the weights' address, never on the batch.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx512_bf16 {
namespace {

using avx512::in_register;
using avx512::prefetch_weights_ahead;
using avx512::transpose_sum16;

constexpr int kTileRows = 4;
constexpr int kTileTokens = 6;  // 24 accumulators, 6 x vectors and a weight vector: 31 of the 32 zmm registers
// Tokens per block: 96 tokens of 2048 bf16 are 384 KiB of the 1 MiB L2; the weights are read once per block. Whole
// inputs per tile ran faster than chunks of 512 or 1024 inputs with the accumulators saved between them.
constexpr int64_t kBlockTokens = 96;

// Lanes e of a 32-value step at virtual input i that hold the row: begin <= i + e < end.
__mmask32 valid_lanes(int64_t i, int64_t begin, int64_t end) {
  uint64_t m = 0xffffffffu;
  if (begin > i) m = begin - i >= 32 ? 0 : m << (begin - i);
  if (end < i + 32) m &= end <= i ? 0 : (uint64_t(1) << (end - i)) - 1;
  return __mmask32(m);
}

// x: f32 [num_tokens, num_in] -> bf16 [num_tokens, x_stride] in this thread's packed scratch, each row at virtual
// inputs [phase, phase + num_in) of a zero-padded multiple of 32.
const uint16_t* to_bf16(const float* x, int64_t num_in, int64_t num_tokens, int64_t x_stride, int64_t phase) {
  auto* out = static_cast<uint16_t*>(packed_activation_scratch(num_tokens * x_stride * 2));
  const int64_t padded = (phase + num_in + 31) / 32 * 32;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float* row = x + t * num_in - phase;  // virtual input i is row[i]
    for (int64_t i = 0; i < padded; i += 32) {
      const __mmask32 valid = valid_lanes(i, phase, phase + num_in);
      const __m512 a = _mm512_maskz_loadu_ps(__mmask16(valid), row + i);
      const __m512 b = _mm512_maskz_loadu_ps(__mmask16(valid >> 16), row + i + 16);
      _mm512_storeu_si512(out + t * x_stride + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
    }
  }
  return out;
}

// sums[t][r0 + r] += rows[r0 + r] . token t, the rows' virtual inputs [phase, phase + num_in) (rows point at virtual
// input 0, phase values before the row's first). A call of a few tokens (kStreamed) prefetches its own rows ahead,
// as they stream from memory; a prefill tile instead brings num_in / 2 bytes from next into L2, its share of the
// next group's rows (see matmul_bf16).
template <int kTokens, bool kStreamed>
__attribute__((always_inline)) inline void tile(const uint16_t* const* rows, const uint16_t* xb, int64_t x_stride,
                                                int64_t num_in, int64_t phase, __m512 (*sums)[16], int r0,
                                                const char* next) {
  __m512 acc[kTileRows][kTokens];
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) acc[r][t] = sums[t][r0 + r];
  // A step whose weights are partly outside the row: the weights masked (x is zero there).
  const auto partial_step = [&](int64_t i) {
    const __mmask32 m = valid_lanes(i, phase, phase + num_in);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, rows[r0 + r] + i));
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t)
        acc[r][t] =
            _mm512_dpbf16_ps(acc[r][t], wv, reinterpret_cast<__m512bh>(_mm512_loadu_si512(xb + t * x_stride + i)));
    }
  };
  int64_t i = 0;
  if (phase > 0) {
    partial_step(0);
    i = 32;
  }
  const int64_t whole_end = (phase + num_in) / 32 * 32;
  for (; i < whole_end; i += 32) {
    __m512bh xv[kTokens];
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t)
      xv[t] = reinterpret_cast<__m512bh>(in_register(_mm512_castsi512_ps(_mm512_loadu_si512(xb + t * x_stride + i))));
    if constexpr (!kStreamed) _mm_prefetch(next + i / 2, _MM_HINT_T1);
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      if constexpr (kStreamed) prefetch_weights_ahead<kTokens>(rows[r0 + r] + i);
      const __m512bh wv =
          reinterpret_cast<__m512bh>(in_register(_mm512_castsi512_ps(_mm512_loadu_si512(rows[r0 + r] + i))));
#pragma GCC unroll 6
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
    }
  }
  if (i < phase + num_in) partial_step(i);
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r)
#pragma GCC unroll 6
    for (int t = 0; t < kTokens; ++t) sums[t][r0 + r] = acc[r][t];
}

// y[t * num_out + o0 + r] for kTokens tokens at xb and the nr rows at rows (padded to whole tiles by repeats).
template <int kTokens, bool kStreamed>
void tokens_times_rows(const uint16_t* const* rows, const uint16_t* xb, int64_t x_stride, float* y, int64_t num_out,
                       int64_t num_in, int64_t phase, int64_t o0, int nr, const char* next) {
  alignas(64) __m512 sums[kTokens][16];
  for (int t = 0; t < kTokens; ++t)
    for (int r = 0; r < 16; ++r) sums[t][r] = _mm512_setzero_ps();
  for (int r0 = 0; r0 < nr; r0 += kTileRows)
    tile<kTokens, kStreamed>(rows, xb, x_stride, num_in, phase, sums, r0, next + r0 / kTileRows * (num_in / 2));
  const __mmask16 keep = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * num_out + o0, keep, transpose_sum16(sums[t]));
}

// The virtual input at which the rows' 64-byte lines start: the inputs before it take a masked first step.
int64_t line_phase(const void* w, int64_t num_in) {
  if (num_in % 32 != 0) return 0;  // rows of part lines would each start elsewhere in a line
  return int64_t(reinterpret_cast<uintptr_t>(w) % 64) / 2;
}

template <bool kStreamed>
void tiled_bf16(const uint16_t* weights, const uint16_t* xb, int64_t x_stride, float* y, int64_t num_out,
                int64_t num_in, int64_t num_tokens, int64_t phase) {
  for (int64_t b0 = 0; b0 < num_tokens; b0 += kBlockTokens) {
    const int64_t b1 = std::min(b0 + kBlockTokens, num_tokens);
    for (int64_t o0 = 0; o0 < num_out; o0 += 16) {
      const int nr = num_out - o0 < 16 ? int(num_out - o0) : 16;
      // Each row as of its virtual input 0, phase values before its first (only read through masks).
      const uint16_t* rows[16];
      for (int r = 0; r < 16; ++r) rows[r] = weights + (o0 + std::min(r, nr - 1)) * num_in - phase;
      // The next group's 16 rows (after the last group, the first one's, which the next block reads first) are
      // num_in * 32 bytes: the first 16 token tiles' 4 row tiles each bring a 64th of them into L2, so the group
      // after this one finds its weights there instead of waiting on memory.
      const char* next = reinterpret_cast<const char*>(weights + (o0 + 16 < num_out ? o0 + 16 : 0) * num_in);
      for (int64_t t = b0; t < b1; t += kTileTokens) {
        const uint16_t* xt = xb + t * x_stride;
        float* yt = y + t * num_out;
        const char* next_t = next + (t - b0) / kTileTokens % 16 * 4 * (num_in / 2);
        const auto run = [&]<int kTokens>() {
          tokens_times_rows<kTokens, kStreamed>(rows, xt, x_stride, yt, num_out, num_in, phase, o0, nr, next_t);
        };
        switch (std::min<int64_t>(kTileTokens, b1 - t)) {
          case 1: run.template operator()<1>(); break;
          case 2: run.template operator()<2>(); break;
          case 3: run.template operator()<3>(); break;
          case 4: run.template operator()<4>(); break;
          case 5: run.template operator()<5>(); break;
          default: run.template operator()<6>(); break;
        }
      }
    }
  }
}

}  // namespace

void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const int64_t phase = line_phase(w, num_in);
  // A line past a whole number of 32-value steps, so the tokens' rows do not all fall in one L1 set.
  const int64_t x_stride = (phase + num_in + 31) / 32 * 32 + 32;
  const uint16_t* xb = to_bf16(x, num_in, num_tokens, x_stride, phase);
  const auto* weights = static_cast<const uint16_t*>(w);
  // One token tile a group: its weights stream from memory once, so it prefetches its own rows.
  if (num_tokens <= kTileTokens)
    tiled_bf16<true>(weights, xb, x_stride, y, num_out, num_in, num_tokens, phase);
  else
    tiled_bf16<false>(weights, xb, x_stride, y, num_out, num_in, num_tokens, phase);
}

}  // namespace pagoda::kernels::avx512_bf16
