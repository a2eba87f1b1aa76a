// AVX512-BF16 matmul for bf16 weights: the activations are rounded to bf16 once per call (round to nearest even,
// vcvtne2ps2bf16), then vdpbf16ps multiplies 32 weight/activation pairs per instruction into 16 f32 lanes, twice
// the multiplies of an f32 fma and no widening of the weights. The rounded activations change results by up to
// about 2^-9 of each product (the tests allow that, KernelTable's bf16 contract says so); each token is computed
// alone, so its result never depends on the tokens beside it. Row tails through masked loads.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx512_bf16 {
namespace {

using avx512::prefetch_weights_ahead;

// x: f32 [num_tokens, num_in] -> bf16 [num_tokens, padded] in this thread's packed scratch, padded = num_in rounded
// up to 32 with zeros.
const uint16_t* to_bf16(const float* x, int64_t num_in, int64_t num_tokens, int64_t padded) {
  auto* out = static_cast<uint16_t*>(packed_activation_scratch(num_tokens * padded * 2));
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t i = 0; i < padded; i += 32) {
      const int64_t left = num_in - i;
      const __mmask16 lo = left >= 16 ? __mmask16(0xffff) : left > 0 ? __mmask16((1u << left) - 1) : __mmask16(0);
      const __mmask16 hi = left >= 32  ? __mmask16(0xffff)
                           : left > 16 ? __mmask16((1u << (left - 16)) - 1)
                                       : __mmask16(0);
      const __m512 a = _mm512_maskz_loadu_ps(lo, x + t * num_in + i);
      const __m512 b = _mm512_maskz_loadu_ps(hi, x + t * num_in + i + 16);
      _mm512_storeu_si512(out + t * padded + i, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(b, a)));
    }
  }
  return out;
}

template <int kTokens>
inline void row_times_tokens(const uint16_t* w_row, const uint16_t* xb, int64_t padded, float* y, int64_t num_out,
                             int64_t num_in) {
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t i = 0; i < num_in; i += 32) {
    const __mmask32 m = num_in - i >= 32 ? __mmask32(0xffffffff) : __mmask32((uint64_t(1) << (num_in - i)) - 1);
    prefetch_weights_ahead<kTokens>(w_row + i);
    const __m512bh wv = reinterpret_cast<__m512bh>(_mm512_maskz_loadu_epi16(m, w_row + i));
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_dpbf16_ps(acc[t], wv, reinterpret_cast<__m512bh>(_mm512_loadu_si512(xb + t * padded + i)));
  }
  for (int t = 0; t < kTokens; ++t) y[t * num_out] = _mm512_reduce_add_ps(acc[t]);
}

}  // namespace

void matmul_bf16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const int64_t padded = (num_in + 31) / 32 * 32;
  const uint16_t* xb = to_bf16(x, num_in, num_tokens, padded);
  const auto* rows = static_cast<const uint16_t*>(w);
  int64_t t = 0;
  for (; t + 4 <= num_tokens; t += 4)
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<4>(rows + o * num_in, xb + t * padded, padded, y + t * num_out + o, num_out, num_in);
  for (; t < num_tokens; ++t)
    for (int64_t o = 0; o < num_out; ++o)
      row_times_tokens<1>(rows + o * num_in, xb + t * padded, padded, y + t * num_out + o, num_out, num_in);
}

}  // namespace pagoda::kernels::avx512_bf16
