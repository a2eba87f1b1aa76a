// 512-bit vpdpbusd W8A8 matmul for INT8x16 weights (quant/row_int8x8.h) against per-token INT8 activations: the
// arithmetic of avx_vnni/matmul_int8x8.cc (weights flipped to w + 128 by one xor per load, the accumulator starting
// at -128 sum(x), exact in wrapping int32) with one zmm register per word of sixteen rows, then float(isum) *
// (w_scale * x_scale) per row: the plain INT8 kernel's bits.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::avx512 {
namespace {

// y[t * y_stride + r] for r < 16 = row r of `group` . token t, t < kTokens; x: this token group's packed words
// (kernels/packed_activations.h), starts: its tokens' -128 sum(x).
template <int kTokens>
inline void group_times_tokens(const void* group, const uint8_t* x, const float* x_scales, const int32_t* starts,
                               int64_t num_in, float* y, int64_t y_stride) {
  constexpr int kChains = kTokens < 4 ? 4 / kTokens : 1;  // a row is one long chain per token: split it
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  const int8_t* q = quant::int8x16_values(group);
  const auto* xs = reinterpret_cast<const int8_t*>(x);
  __m512i acc[kChains][kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[0][t] = _mm512_set1_epi32(starts[t]);
    for (int c = 1; c < kChains; ++c) acc[c][t] = _mm512_setzero_si512();
  }
  const int64_t num_words = num_in / 4;
  int64_t word = 0;
  for (; word + kChains <= num_words; word += kChains) {
    for (int c = 0; c < kChains; ++c) {
      prefetch_weights_ahead<kTokens>(q + 64 * (word + c));
      const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * (word + c)), flip);
      for (int t = 0; t < kTokens; ++t)
        acc[c][t] = _mm512_dpbusd_epi32(acc[c][t], w, broadcast4(xs + 4 * (kTokenGroup * (word + c) + t)));
    }
  }
  for (; word < num_words; ++word) {
    const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(q + 64 * word), flip);
    for (int t = 0; t < kTokens; ++t)
      acc[0][t] = _mm512_dpbusd_epi32(acc[0][t], w, broadcast4(xs + 4 * (kTokenGroup * word + t)));
  }
  const __m512 w_scales = _mm512_loadu_ps(quant::int8x16_scales(group));
  for (int t = 0; t < kTokens; ++t) {
    for (int c = 1; c < kChains; ++c) acc[0][t] = _mm512_add_epi32(acc[0][t], acc[c][t]);
    _mm512_storeu_ps(y + t * y_stride, _mm512_mul_ps(_mm512_cvtepi32_ps(acc[0][t]),
                                                     _mm512_mul_ps(w_scales, _mm512_set1_ps(x_scales[t]))));
  }
}

}  // namespace

void matmul_int8x16_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                         int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in, 16);
  const PackedInt8Activations packed = pack_int8_activations(xq, num_tokens, num_in, kTokenGroup, -128);
  const int64_t group_bytes = quant::int8x16_group_bytes(num_in);
  const auto* groups = static_cast<const uint8_t*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      group_bytes, num_out / 16, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        group_times_tokens<kTokens>(groups + g * group_bytes, packed.words + t / kTokenGroup * num_in * kTokenGroup,
                                    x_scales + t, packed.starts + t, num_in, y + t * y_stride + 16 * g, y_stride);
      });
}

void matmul_int8x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx512::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8x16_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx512
