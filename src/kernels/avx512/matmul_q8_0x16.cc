// 512-bit vpdpbusd matmul for Q8_0x16 weights (quant/block_q8_0x8.h) against Q8_0 activations: the arithmetic of
// avx_vnni/matmul_int8x8.cc (weights flipped to w + 128 by one xor per load, the accumulator starting at
// -128 sum(x)), one zmm register per word of sixteen rows. Bit-exact with ref/.
#include <immintrin.h>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_q8_0x8.h"

namespace pagoda::kernels::avx512 {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_0x16;

template <int kTokens>
inline void group_times_tokens(const BlockQ8_0x16* group, const uint8_t* x, int64_t num_blocks, float* y,
                               int64_t y_stride) {
  constexpr int64_t kBlockBytes = packed_q8_block_bytes(kTokenGroup);
  constexpr int kChains = kTokens < 4 ? 2 : 1;  // shorter dependency chains while few tokens interleave theirs
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b, x += kBlockBytes) {
    const BlockQ8_0x16& blk = group[b];
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* d = reinterpret_cast<const float*>(x + kTokenGroup * 32);
    const auto* start = reinterpret_cast<const int32_t*>(x + kTokenGroup * 36);
    __m512i isum[kChains][kTokens];
    for (int t = 0; t < kTokens; ++t) {
      isum[0][t] = _mm512_set1_epi32(start[t]);
      if constexpr (kChains == 2) isum[1][t] = _mm512_setzero_si512();
    }
    prefetch_weights_ahead<kTokens>(&blk);  // 544 bytes per block: one prefetch per 64 (here and in the loop)
    for (int word = 0; word < 8; ++word) {
      prefetch_weights_ahead<kTokens>(reinterpret_cast<const char*>(&blk) + 32 + 64 * word);
      const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(blk.qs + 64 * word), flip);
      for (int t = 0; t < kTokens; ++t)
        isum[word % kChains][t] = _mm512_dpbusd_epi32(isum[word % kChains][t], w, broadcast4(qs + 32 * t + 4 * word));
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      if constexpr (kChains == 2) isum[0][t] = _mm512_add_epi32(isum[0][t], isum[1][t]);
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(d[t]));
      acc[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(isum[0][t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

}  // namespace

void matmul_q8_0x16_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  check_x8_block_shape(num_out, num_in, 16);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const uint8_t* packed = pack_q8_activations(xq, num_tokens, num_blocks, kTokenGroup, -128);
  const auto* groups = static_cast<const BlockQ8_0x16*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      num_blocks * int64_t(sizeof(BlockQ8_0x16)), num_out / 16, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        group_times_tokens<kTokens>(groups + g * num_blocks,
                                    packed + t / kTokenGroup * num_blocks * packed_q8_block_bytes(kTokenGroup),
                                    num_blocks, y + t * y_stride + 16 * g, y_stride);
      });
}

void matmul_q8_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x16_q8_0(w, quantize_activations_q8_0(avx512::quantize_row_q8_0, x, num_in, num_tokens), y, num_out,
                      num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx512
