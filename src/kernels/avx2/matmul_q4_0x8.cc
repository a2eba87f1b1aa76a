// AVX2 matmul for Q4_0x8 weights (quant/block_q4_0x8.h) against Q8_0 activations. One 32-byte load holds four
// values of each of eight rows; its low and high nibbles, unsigned, times the matching four activations broadcast
// to every lane (maddubs) leave each row's partial sums in its own 32-bit lane, so eight rows take one madd, one
// convert and one fma per block, with no horizontal sum, and their eight scales one vector multiply. The nibbles'
// offset of 8 comes off as 8 sum(x), computed once per activation block. Exact in integers: a lane of the int16
// sum is at most 8 maddubs x 2 x 15 x 128 = 30720 < 32767. Tokens go in groups of four per weight load, over row
// tiles that stay in L2, as in matmul_quant.cc.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/row_tiling.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::avx2 {
namespace {

using quant::BlockQ4_0x8;
using quant::BlockQ8_0;

// y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens.
template <int kTokens>
inline void group_times_tokens(const BlockQ4_0x8* group, const BlockQ8_0* xq, const Q8BlockSums* sums,
                               int64_t num_blocks, float* y, int64_t y_stride) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const BlockQ4_0x8& blk = group[b];
    // 144 bytes per block: three prefetches 48 bytes apart touch every line the block ahead spans.
    prefetch_weights_ahead(&blk);
    prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 48);
    prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 96);
    __m256i acc16[kTokens];
    for (int t = 0; t < kTokens; ++t) acc16[t] = _mm256_setzero_si256();
    for (int word = 0; word < 4; ++word) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * word));
      const __m256i lo = _mm256_and_si256(v, low);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* xs = xq[t * num_blocks + b].qs;
        acc16[t] = _mm256_add_epi16(acc16[t], _mm256_maddubs_epi16(lo, broadcast4(xs + 4 * word)));
        acc16[t] = _mm256_add_epi16(acc16[t], _mm256_maddubs_epi16(hi, broadcast4(xs + 16 + 4 * word)));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      const Q8BlockSums& s = sums[t * num_blocks + b];
      const __m256i isum =
          _mm256_sub_epi32(_mm256_madd_epi16(acc16[t], _mm256_set1_epi16(1)), _mm256_set1_epi32(s.sum8));
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(s.d)), _mm256_cvtepi32_ps(isum), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

void block_sums(const BlockQ8_0* xq, Q8BlockSums* sums, int64_t n) {
  const __m256i ones8 = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < n; ++i) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i].qs));
    const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), _mm256_set1_epi16(1));
    sums[i] = Q8BlockSums{_cvtsh_ss(xq[i].d), 8 * hsum_epi32(pairs)};
  }
}

}  // namespace

void matmul_q4_0x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  check_q4_0x8_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  Q8BlockSums* sums = activation_sums_scratch(num_tokens * num_blocks);
  block_sums(xq, sums, num_tokens * num_blocks);
  const auto* groups = static_cast<const BlockQ4_0x8*>(w);
  // Groups of 8 rows walked like rows: tiles that fit in L2, tokens in fours inside a tile (avx2/row_tiling.h).
  for_each_row_and_token_group(
      num_blocks * int64_t(sizeof(*groups)), num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        group_times_tokens<kTokens>(groups + g * num_blocks, xq + t * num_blocks, sums + t * num_blocks, num_blocks,
                                    y + t * y_stride + 8 * g, y_stride);
      });
}

void matmul_q4_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  BlockQ8_0* xq = activation_scratch_q8_0(num_tokens, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  for (int64_t t = 0; t < num_tokens; ++t) avx2::quantize_row_q8_0(x + t * num_in, xq + t * num_blocks, num_in);
  matmul_q4_0x8_q8_0(w, xq, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::avx2
