// AVX2 matmul for Q8_0x8 weights (quant/block_q8_0x8.h) against Q8_0 activations: one 32-byte load holds four
// values of each of eight rows, so each row's dot product stays in its own 32-bit lane (no horizontal sums) and
// eight rows share one convert, one fma and one vector of scales per block. Signed weights take maddubs's sign
// trick, |w| (unsigned) times x carrying w's sign; a pair is at most 2 x 128 x 127 = 32512, so each word's pairs
// go to int32 (madd) before they are summed. Tokens go in groups of four per weight load, over row tiles that
// stay in L2, as in matmul_int4x8.cc.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_q8_0x8.h"

namespace pagoda::kernels::avx2 {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_0x8;

// y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens.
template <int kTokens>
inline void group_times_tokens(const BlockQ8_0x8* group, const BlockQ8_0* xq, int64_t num_blocks, float* y,
                               int64_t y_stride) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const BlockQ8_0x8& blk = group[b];
    __m256i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_setzero_si256();
    for (int word = 0; word < 8; ++word) {
      // 272 bytes per block: one prefetch per 64 (here and after the loop) touches every line of the block ahead.
      if (word % 2 == 0) prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 32 * word);
      const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * word));
      const __m256i abs_w = _mm256_sign_epi8(w, w);
      for (int t = 0; t < kTokens; ++t) {
        const __m256i x = broadcast4(xq[t * num_blocks + b].qs + 4 * word);
        const __m256i pairs = _mm256_maddubs_epi16(abs_w, _mm256_sign_epi8(x, w));
        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(pairs, ones));
        // A running sum per token, as in matmul_int4x8.cc: otherwise GCC sums all products as a tree and spills.
        if constexpr (kTokens > 1) __asm__("" : "+x"(isum[t]));
      }
    }
    prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 256);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(_cvtsh_ss(xq[t * num_blocks + b].d)));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

}  // namespace

void matmul_q8_0x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* groups = static_cast<const BlockQ8_0x8*>(w);
  // Groups of 8 rows walked like rows: tiles that fit in L2, tokens in fours inside a tile (kernels/row_tiling.h).
  for_each_row_and_token_group(num_blocks * int64_t(sizeof(*groups)), num_out / 8, num_tokens,
                               [&]<int kTokens>(int64_t g, int64_t t) {
                                 group_times_tokens<kTokens>(groups + g * num_blocks, xq + t * num_blocks, num_blocks,
                                                             y + t * y_stride + 8 * g, y_stride);
                               });
}

void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x8_q8_0(w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                     num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx2
