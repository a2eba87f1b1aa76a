// 512-bit vpdpbusd matmuls for the 16-row 4-bit layouts, Q4_0x16 and AWQ INT4x16 (quant/block_q4_0x8.h,
// block_awq_int4x8.h), against Q8_0 activations: avx_vnni/matmul_int4x8.cc's arithmetic with one zmm register per
// word of sixteen rows, so each activation broadcast and each per-token scale feeds sixteen rows. Faster than the
// 8-row ymm kernel taking two row groups per pass, even where 512-bit operations run as two 256-bit halves (fewer
// loads and epilogue instructions per multiply). Bit-exact with ref/.
#include <immintrin.h>

#include <type_traits>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/zmm_util.h"
#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::avx512 {
namespace {

using quant::BlockAwqInt4x16;
using quant::BlockQ4_0x16;
using quant::BlockQ8_0;

// y[t * y_stride + r] for r < 16 = row r of `group` . token t, t < kTokens; x: this token group's packed blocks
// (kernels/packed_activations.h: starts are -sum(x), times 8 for Q4_0).
template <class Block, int kTokens>
inline void group_times_tokens(const Block* group, const uint8_t* x, int64_t num_blocks, float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = packed_q8_block_bytes(kTokenGroup);
  constexpr bool kSplit = kTokens < 4;  // two chains (low, high nibbles) while few tokens interleave theirs
  const __m512i low = _mm512_set1_epi8(0x0f);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b, x += kBlockBytes) {
    const Block& blk = group[b];
    for (size_t offset = 0; offset < sizeof(Block); offset += 64)
      prefetch_weights_ahead<kTokens>(reinterpret_cast<const char*>(&blk) + offset);
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* d = reinterpret_cast<const float*>(x + kTokenGroup * 32);
    const auto* start = reinterpret_cast<const int32_t*>(x + kTokenGroup * 36);
    __m512i isum[kTokens], isum_hi[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      if constexpr (std::is_same_v<Block, BlockAwqInt4x16>) {
        const __m512i zeros = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.zero)));
        isum[t] = _mm512_mullo_epi32(zeros, _mm512_set1_epi32(start[t]));
      } else {
        isum[t] = _mm512_set1_epi32(start[t]);
      }
      if constexpr (kSplit) isum_hi[t] = _mm512_setzero_si512();
    }
    for (int word = 0; word < 4; ++word) {
      const __m512i v = _mm512_loadu_si512(blk.qs + 64 * word);
      const __m512i lo = _mm512_and_si512(v, low);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
      for (int t = 0; t < kTokens; ++t) {
        isum[t] = _mm512_dpbusd_epi32(isum[t], lo, broadcast4(qs + 32 * t + 4 * word));
        if constexpr (kSplit)
          isum_hi[t] = _mm512_dpbusd_epi32(isum_hi[t], hi, broadcast4(qs + 32 * t + 16 + 4 * word));
        else
          isum[t] = _mm512_dpbusd_epi32(isum[t], hi, broadcast4(qs + 32 * t + 16 + 4 * word));
      }
    }
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      if constexpr (kSplit) isum[t] = _mm512_add_epi32(isum[t], isum_hi[t]);
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(d[t]));
      acc[t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + t * y_stride, acc[t]);
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_x8_block_shape(num_out, num_in, 16);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const uint8_t* packed =
      pack_q8_activations(xq, num_tokens, num_blocks, kTokenGroup, std::is_same_v<Block, BlockQ4_0x16> ? -8 : -1);
  const auto* groups = static_cast<const Block*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      num_blocks * int64_t(sizeof(Block)), num_out / 16, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        group_times_tokens<Block, kTokens>(groups + g * num_blocks,
                                           packed + t / kTokenGroup * num_blocks * packed_q8_block_bytes(kTokenGroup),
                                           num_blocks, y + t * y_stride + 16 * g, y_stride);
      });
}

template <class Block>
void matmul_f32_in(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_xq<Block>(w, quantize_activations_q8_0(avx512::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                   num_tokens, num_out);
}

}  // namespace

void matmul_q4_0x16_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                         int64_t num_tokens, int64_t y_stride) {
  matmul_xq<BlockQ4_0x16>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_awq_int4x16_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                             int64_t num_tokens, int64_t y_stride) {
  matmul_xq<BlockAwqInt4x16>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}
void matmul_q4_0x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<BlockQ4_0x16>(w, x, y, num_out, num_in, num_tokens);
}
void matmul_awq_int4x16(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_f32_in<BlockAwqInt4x16>(w, x, y, num_out, num_in, num_tokens);
}

}  // namespace pagoda::kernels::avx512
