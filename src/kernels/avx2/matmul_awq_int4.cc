// AVX2 matmul for AWQ INT4 weights (groups of 32, 64, 128) against Q8_0 activations. Per 32-value sub-block the
// nibbles are unpacked (one shift, one mask), the group's zero point subtracted to give signed weights in
// [-15, 15], and the integer dot product taken as in the Q4_0 kernel: |w| (unsigned) times x carrying w's sign
// via maddubs, pairs to int32 via madd, then one fma with d_w * d_x per sub-block.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_awq_int4.h"

namespace pagoda::kernels::avx2 {
namespace {

using quant::BlockQ8_0;

// y[k * y_stride] = row . token k for k < kTokens; xq points at the first token's blocks (row stride num_blocks).
template <int64_t kGroup, int kTokens>
inline void row_times_tokens(const quant::BlockAwqInt4<kGroup>* w_row, const BlockQ8_0* xq, int64_t num_groups,
                             float* y, int64_t y_stride) {
  constexpr int64_t kSub = quant::BlockAwqInt4<kGroup>::kNumSubBlocks;
  const int64_t num_blocks = num_groups * kSub;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i low_mask = _mm256_set1_epi8(0x0f);
  __m256 acc[kTokens];
  for (int k = 0; k < kTokens; ++k) acc[k] = _mm256_setzero_ps();
  for (int64_t g = 0; g < num_groups; ++g) {
    const quant::BlockAwqInt4<kGroup>& wg = w_row[g];
    const __m256i zero = _mm256_set1_epi8(char(wg.zero));
    const float dw = _cvtsh_ss(wg.d);
    for (int64_t s = 0; s < kSub; ++s) {
      if (s % 4 == 0) prefetch_weights_ahead(wg.qs + 16 * s);  // 64 bytes of nibbles
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wg.qs + 16 * s));
      // Low nibbles are values 0..15 of the sub-block, high nibbles 16..31: the shifted copy goes in the upper lane.
      const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low_mask);
      const __m256i qw = _mm256_sub_epi8(nibbles, zero);
      const __m256i abs_w = _mm256_sign_epi8(qw, qw);
      for (int k = 0; k < kTokens; ++k) {
        const BlockQ8_0& xb = xq[k * num_blocks + g * kSub + s];
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
        const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(qx, qw)), ones);
        acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(dw * _cvtsh_ss(xb.d)), _mm256_cvtepi32_ps(pairs), acc[k]);
      }
    }
  }
  for (int k = 0; k < kTokens; ++k) y[k * y_stride] = hsum(acc[k]);
}

template <int64_t kGroup>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_group_row_length(num_in, kGroup);
  const int64_t num_groups = num_in / kGroup;
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* wb = static_cast<const quant::BlockAwqInt4<kGroup>*>(w);
  const int64_t row_bytes = num_groups * int64_t(sizeof(quant::BlockAwqInt4<kGroup>));
  for_each_row_and_token_group(row_bytes, num_out, num_tokens, [&]<int kTokens>(int64_t o, int64_t t) {
    row_times_tokens<kGroup, kTokens>(wb + o * num_groups, xq + t * num_blocks, num_groups, y + t * y_stride + o,
                                      y_stride);
  });
}

template <int64_t kGroup>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  check_group_row_length(num_in, kGroup);
  matmul_xq<kGroup>(w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                    num_tokens, num_out);
}

}  // namespace

void matmul_awq_int4_g32_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride) {
  matmul_xq<32>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g64_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                              int64_t num_tokens, int64_t y_stride) {
  matmul_xq<64>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g128_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                               int64_t num_tokens, int64_t y_stride) {
  matmul_xq<128>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4_g32(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<32>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4_g64(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<64>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4_g128(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,
                          int64_t num_tokens) {
  matmul_f32_in<128>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx2
