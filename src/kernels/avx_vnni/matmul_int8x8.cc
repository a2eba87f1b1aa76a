// vpdpbusd matmuls for the signed 8-row interleaved layouts, Q8_0x8 (against Q8_0 activations) and INT8x8 (against
// per-token INT8), quant/block_q8_0x8.h and row_int8x8.h. vpdpbusd multiplies unsigned by signed bytes, so each
// weight word is flipped to w + 128 (an xor with 0x80, once per load, shared by every token), and the accumulator
// starts at -128 x sum(x) to take the 128 x sum(x) back off: sum((w + 128) x) - 128 sum(x) = sum(w x), exactly
// (int32 wraps, and the true sum fits: quant::kMaxInt8RowLength), even for the -128 a foreign file may hold. Then
// the scaling of the scalar references: Q8_0x8 acc = fma(d_w * d_x, float(isum), acc) per block, INT8x8
// float(isum) * (w_scale * x_scale) per row.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_0x8;

inline __m256i load_offset_weights(const void* p) {
  return _mm256_xor_si256(_mm256_loadu_si256(static_cast<const __m256i*>(p)), _mm256_set1_epi8(char(0x80)));
}

// Q8_0x8: y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens; sums[.].sum = -128 sum(x).
template <int kTokens>
inline void q8_0_group_times_tokens(const BlockQ8_0x8* group, const BlockQ8_0* xq, const Q8BlockSums* sums,
                                    int64_t num_blocks, float* y, int64_t y_stride) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const BlockQ8_0x8& blk = group[b];
    __m256i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_set1_epi32(sums[t * num_blocks + b].sum);
    for (int word = 0; word < 8; ++word) {
      // 272 bytes per block: one prefetch per 64 (here and after the loop) touches every line of the block ahead.
      if (word % 2 == 0) prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 32 * word);
      const __m256i w = load_offset_weights(blk.qs + 32 * word);
      for (int t = 0; t < kTokens; ++t) isum[t] = dpbusd(isum[t], w, broadcast4(xq[t * num_blocks + b].qs + 4 * word));
    }
    prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 256);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(sums[t * num_blocks + b].d));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// INT8x8: the same over a whole row; x_start[t] = -128 sum(x_t).
template <int kTokens>
inline void int8_group_times_tokens(const void* group, const int8_t* x, const float* x_scales, const int32_t* x_start,
                                    int64_t num_in, float* y, int64_t y_stride) {
  const int8_t* q = quant::int8x8_values(group);
  __m256i acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_set1_epi32(x_start[t]);
  for (int64_t word = 0; word < num_in / 4; ++word) {
    if (word % 2 == 0) prefetch_weights_ahead(q + 32 * word);
    const __m256i w = load_offset_weights(q + 32 * word);
    for (int t = 0; t < kTokens; ++t) acc[t] = dpbusd(acc[t], w, broadcast4(x + t * num_in + 4 * word));
  }
  const __m256 w_scales = _mm256_loadu_ps(quant::int8x8_scales(group));
  for (int t = 0; t < kTokens; ++t)
    _mm256_storeu_ps(y + t * y_stride,
                     _mm256_mul_ps(_mm256_cvtepi32_ps(acc[t]), _mm256_mul_ps(w_scales, _mm256_set1_ps(x_scales[t]))));
}

}  // namespace

void matmul_q8_0x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  Q8BlockSums* sums = activation_sums_scratch(num_tokens * num_blocks);
  for (int64_t i = 0; i < num_tokens * num_blocks; ++i)
    sums[i] = Q8BlockSums{_cvtsh_ss(xq[i].d), -128 * sum_32_int8(xq[i].qs)};
  const auto* groups = static_cast<const BlockQ8_0x8*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      num_blocks * int64_t(sizeof(*groups)), num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        q8_0_group_times_tokens<kTokens>(groups + g * num_blocks, xq + t * num_blocks, sums + t * num_blocks,
                                         num_blocks, y + t * y_stride + 8 * g, y_stride);
      });
}

void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x8_q8_0(w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                     num_tokens, num_out);
}

void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in);
  // -128 sum(x) per token, in the sums scratch's int field (its d unused here).
  Q8BlockSums* starts = activation_sums_scratch(num_tokens);
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int8_t* x = xq + t * num_in;
    __m256i s = _mm256_setzero_si256();
    int64_t i = 0;
    for (; i + 32 <= num_in; i += 32)
      s = dpbusd(s, _mm256_set1_epi8(1), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    int32_t sum = hsum_epi32(s);
    for (; i < num_in; ++i) sum += x[i];
    starts[t] = Q8BlockSums{0.0f, -128 * sum};
  }
  const int64_t group_bytes = quant::int8x8_group_bytes(num_in);
  const auto* groups = static_cast<const uint8_t*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      group_bytes, num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        int32_t x_start[kTokens];
        for (int k = 0; k < kTokens; ++k) x_start[k] = starts[t + k].sum;
        int8_group_times_tokens<kTokens>(groups + g * group_bytes, xq + t * num_in, x_scales + t, x_start, num_in,
                                         y + t * y_stride + 8 * g, y_stride);
      });
}

void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx2::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8x8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
