// AVX2 matmuls for the 4-bit row-interleaved layouts, Q4_0x8 and AWQ INT4x8 (quant/block_q4_0x8.h,
// block_awq_int4x8.h), against Q8_0 activations. One 32-byte load holds four values of each of eight rows; its
// low and high nibbles, unsigned, times the matching four activations broadcast to every lane (maddubs) leave each
// row's partial sums in its own 32-bit lane, so eight rows take one madd, one convert and one fma per block, with
// no horizontal sum, and their eight scales one vector multiply. The nibbles' offset (8 for Q4_0, each row's zero
// point for AWQ) comes off as offset x sum(x), sum(x) computed once per activation block. Exact in integers: a
// lane of the int16 sum is at most 8 maddubs x 2 x 15 x 128 = 30720 < 32767. Tokens go in groups of four per
// weight load, over row tiles that stay in L2 (kernels/row_tiling.h).
#include <immintrin.h>

#include <type_traits>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::avx2 {
namespace {

using quant::BlockAwqInt4x8;
using quant::BlockQ4_0x8;
using quant::BlockQ8_0;

// y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens.
template <class Block, int kTokens>
inline void group_times_tokens(const Block* group, const BlockQ8_0* xq, const Q8BlockSums* sums, int64_t num_blocks,
                               float* y, int64_t y_stride) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const Block& blk = group[b];
    // 144 or 152 bytes per block: prefetches 48 bytes apart touch every line the block ahead spans.
    for (size_t offset = 0; offset < sizeof(Block); offset += 48)
      prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + offset);
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
        // Keeps each token's sum a running one: without it GCC computes all 8 x kTokens products first and sums
        // them as a tree, which needs more than 16 registers and spills every product to the stack.
        if constexpr (kTokens > 1) __asm__("" : "+x"(acc16[t]));
      }
    }
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    [[maybe_unused]] __m256i zeros;  // AWQ: the eight rows' zero points as int32
    if constexpr (std::is_same_v<Block, BlockAwqInt4x8>)
      zeros = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.zero)));
    for (int t = 0; t < kTokens; ++t) {
      const Q8BlockSums& s = sums[t * num_blocks + b];
      __m256i offset;
      if constexpr (std::is_same_v<Block, BlockAwqInt4x8>)
        offset = _mm256_mullo_epi32(zeros, _mm256_set1_epi32(s.sum));
      else
        offset = _mm256_set1_epi32(s.sum);  // 8 x sum(x), scaled by block_sums: one broadcast load
      const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(acc16[t], _mm256_set1_epi16(1)), offset);
      acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(s.d)), _mm256_cvtepi32_ps(isum), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// Each activation block's d and sum(x); for Q4_0 the sum is stored times its fixed offset 8, so the kernel's
// offset is a plain broadcast load.
template <class Block>
void block_sums(const BlockQ8_0* xq, Q8BlockSums* sums, int64_t n) {
  constexpr int32_t kSumScale = std::is_same_v<Block, BlockQ4_0x8> ? 8 : 1;
  const __m256i ones8 = _mm256_set1_epi8(1);
  for (int64_t i = 0; i < n; ++i) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[i].qs));
    const __m256i pairs = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), _mm256_set1_epi16(1));
    sums[i] = Q8BlockSums{_cvtsh_ss(xq[i].d), kSumScale * hsum_epi32(pairs)};
  }
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  Q8BlockSums* sums = activation_sums_scratch(num_tokens * num_blocks);
  block_sums<Block>(xq, sums, num_tokens * num_blocks);
  const auto* groups = static_cast<const Block*>(w);
  // Groups of 8 rows walked like rows: tiles that fit in L2, tokens in fours inside a tile (kernels/row_tiling.h).
  for_each_row_and_token_group(
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

}  // namespace pagoda::kernels::avx2
