// AVX-512 matmul for f32, f16 and bf16 weights: each weight row loaded once per group of up to eight tokens (four for
// f16), f32 accumulation on 16 lanes, the row tail through masked loads, 16 rows' sums reduced together. bf16 weights
// are widened to f32 exactly (a shift); avx512/bf16/ replaces that with vdpbf16ps where the CPU has AVX512-BF16.
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

// y[t * num_out + o0 + r] = row o0 + r . token t for r < nr (<= 16) and t < kTokens (x_stride floats apart). Each
// (row, token) sums its products in one register; the 16 registers of a token's rows then reduce together
// (transpose_sum16), about 3 instructions a row where a reduction of its own took 8 on a chain of dependent adds
// (rows of 64 values, as the bundled model's, spent most of their time there). A row's sum is the same bits whatever
// the tokens beside it.
template <class Load, int kTokens>
inline void rows_times_tokens(const void* w, const float* x, int64_t x_stride, float* y, int64_t num_out,
                              int64_t num_in, int64_t o0, int nr) {
  __m512 sums[kTokens][16];
  for (int r = 0; r < 16; ++r) {
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    if (r < nr) {
      const int64_t row_offset = (o0 + r) * num_in;
      for (int64_t i = 0; i < num_in; i += 16) {
        const __mmask16 m = num_in - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (num_in - i)) - 1);
        if (i % 32 == 0) prefetch_weights_ahead<kTokens>(Load::address(w, row_offset + i));
        const __m512 wv = Load::load(w, row_offset + i, m);
        for (int t = 0; t < kTokens; ++t)
          acc[t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x + t * x_stride + i), acc[t]);
      }
    }
    for (int t = 0; t < kTokens; ++t) sums[t][r] = acc[t];
  }
  const __mmask16 rows = nr >= 16 ? __mmask16(0xffff) : __mmask16((1u << nr) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(y + t * num_out + o0, rows, transpose_sum16(sums[t]));
}

// Up to kTokenGroup tokens per pass over the weights (one read of each row for a decode step's speculative tokens).
template <class Load, int kTokens>
void tokens_pass(const void* w, const float* x, int64_t x_stride, float* y, int64_t num_out, int64_t num_in) {
  for (int64_t o = 0; o < num_out; o += 16)
    rows_times_tokens<Load, kTokens>(w, x, x_stride, y, num_out, num_in, o, num_out - o < 16 ? int(num_out - o) : 16);
}

// kGroup tokens per pass over the weights.
template <class Load, int kGroup = kTokenGroup>
void matmul_any(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  static_assert(kGroup >= 1 && kGroup <= 8, "the switch below has passes of 1 to 8 tokens");
  // Three or more tokens of 1024 or more inputs read from a copy whose rows lie a cache line off a multiple of 4 KiB
  // apart: rows of 1024 or 2048 f32 put every token's same offset in one L1 set, and with the weights' lines they
  // overflowed its ways (f16 weights at 16 and 128 tokens, four a pass, on a Zen 5: 1.02-1.41x the avx2 level's
  // kernel without the copy, 1.28-1.86x with it). Short rows, as the bundled model's, need no copy.
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

void matmul_f32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadF32>(w, x, y, num_out, num_in, num_tokens);
}
// f16 weights four tokens a pass: eight tokens' f32 rows of 2048 (64 KiB) overflow L1 and each weight's fmas wait on
// L2; four fit. On a Zen 5 at 16 and 128 tokens: 1.28-1.86x the avx2 level's kernel, eight a pass 0.93-1.29x. A
// decode step's speculative tokens then take two passes (computed from these rates, still cheaper than one pass of
// up to eight; not measured on a model).
void matmul_f16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadF16, 4>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_any<LoadBF16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx512
