// vpdpbusd matmuls for the 4-bit row-interleaved layouts, Q4_0x8 and AWQ INT4x8 (quant/block_q4_0x8.h,
// block_awq_int4x8.h), against Q8_0 activations. As in avx2/matmul_int4x8.cc, one 32-byte load holds four values of
// each of eight rows; its low and high nibbles are already the unsigned operand vpdpbusd wants, so each token takes
// one vpdpbusd per nibble half and word (maddubs + add + madd on AVX2), straight into each row's int32 lane with no
// int16 stage. The nibbles' offset (8 for Q4_0, each row's zero point for AWQ) is the accumulator's starting value,
// -offset x sum(x), so the integer sum comes out already corrected and exact. Then acc = fma(d_w * d_x,
// float(isum), acc) per block: the scalar reference's bits.
#include <immintrin.h>

#include <type_traits>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

using quant::BlockAwqInt4x8;
using quant::BlockQ4_0x8;
using quant::BlockQ8_0;

// y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens. sums[t * num_blocks + b].sum is
// -sum(x) of the block (times 8 for Q4_0).
template <class Block, int kTokens>
inline void group_times_tokens(const Block* group, const BlockQ8_0* xq, const Q8BlockSums* sums, int64_t num_blocks,
                               float* y, int64_t y_stride) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const Block& blk = group[b];
    for (size_t offset = 0; offset < sizeof(Block); offset += 48)
      prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + offset);
    __m256i isum[kTokens];
    if constexpr (std::is_same_v<Block, BlockAwqInt4x8>) {
      const __m256i zeros = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.zero)));
      for (int t = 0; t < kTokens; ++t)
        isum[t] = _mm256_mullo_epi32(zeros, _mm256_set1_epi32(sums[t * num_blocks + b].sum));
    } else {
      for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_set1_epi32(sums[t * num_blocks + b].sum);
    }
    for (int word = 0; word < 4; ++word) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * word));
      const __m256i lo = _mm256_and_si256(v, low);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      for (int t = 0; t < kTokens; ++t) {
        const int8_t* xs = xq[t * num_blocks + b].qs;
        isum[t] = dpbusd(isum[t], lo, broadcast4(xs + 4 * word));
        isum[t] = dpbusd(isum[t], hi, broadcast4(xs + 16 + 4 * word));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(sums[t * num_blocks + b].d));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// Each activation block's d and -sum(x) (times Q4_0's fixed offset 8: the accumulator's start as is).
template <class Block>
void block_sums(const BlockQ8_0* xq, Q8BlockSums* sums, int64_t n) {
  constexpr int32_t kSumScale = std::is_same_v<Block, BlockQ4_0x8> ? -8 : -1;
  for (int64_t i = 0; i < n; ++i) sums[i] = Q8BlockSums{_cvtsh_ss(xq[i].d), kSumScale * sum_32_int8(xq[i].qs)};
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  Q8BlockSums* sums = activation_sums_scratch(num_tokens * num_blocks);
  block_sums<Block>(xq, sums, num_tokens * num_blocks);
  const auto* groups = static_cast<const Block*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      num_blocks * int64_t(sizeof(Block)), num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        group_times_tokens<Block, kTokens>(groups + g * num_blocks, xq + t * num_blocks, sums + t * num_blocks,
                                           num_blocks, y + t * y_stride + 8 * g, y_stride);
      });
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

void matmul_q4_0x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  matmul_xq<BlockQ4_0x8>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                            int64_t num_tokens, int64_t y_stride) {
  matmul_xq<BlockAwqInt4x8>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q4_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<BlockQ4_0x8>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<BlockAwqInt4x8>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
