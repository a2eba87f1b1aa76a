// The avx512 level's MXFP4x8 entry points (quant/block_iq4_x8.h) with a product of its own for one token, a decode
// step's: more tokens go on to codebook_x8_impl.h's loop (matmul_mxfp4x8 and _q8_0 of matmul_kquant_x8.cc), which
// this file must not change. One token's product reads one 8-row group at a time, two consecutive 32-value blocks
// per zmm, so each thread's weights arrive as one forward stream, the pattern the hardware prefetcher follows
// without software prefetches; the levels go in shifted by 12 (unsigned, so vpdpbusd takes them without the sign
// and abs steps) and 12 times the activation block's sum comes off the integer sum, which is then the reference's
// exactly. The float steps are the scalar reference's (ref/matmul_codebook.cc), block after block per row, so the
// bits are too.
#include <immintrin.h>

#include <cstdint>

#include "core/half.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/matmul_mxfp4x8_one_token.h"
#include "kernels/quant_matmul_support.h"
#include "quant/block_iq4_x8.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels::avx512 {
namespace {

using quant::BlockMXFP4x8;
using quant::BlockQ8_0;

// The widest row the one-token product takes (its per-block activation values live on the stack); wider rows take
// the general loop.
constexpr int64_t kMaxBlocks = 1024;
constexpr int kLevelShift = 12;  // -min(kE2M1Doubled)

// The shifted levels, kE2M1Doubled + 12, in every 128-bit lane.
__m512i shifted_levels() {
  alignas(16) int8_t t[16];
  for (int i = 0; i < 16; ++i) t[i] = int8_t(quant::kE2M1Doubled[i] + kLevelShift);
  return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// mxfp4_half_scale of eight exponents (one group's) as f32 lanes: 2^(e - 128), the subnormals 2^-128 and 2^-127 for
// e = 0 and 1.
__m256 half_scales(const uint8_t* e) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(e)));
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
  return _mm256_castsi256_ps(
      _mm256_mask_blend_epi32(_mm256_cmplt_epi32_mask(v, _mm256_set1_epi32(2)), normal, subnormal));
}

int32_t broadcast_word(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// y[8 g + r] = row r of group g . x, for every group; xq the token's num_blocks Q8_0 blocks.
void one_token(const BlockMXFP4x8* groups, const BlockQ8_0* xq, float* y, int64_t num_groups, int64_t num_blocks) {
  int32_t correction[kMaxBlocks];  // 12 * sum of the block's quants
  float dx[kMaxBlocks];
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += xq[b].qs[i];
    correction[b] = kLevelShift * sum;
    dx[b] = fp16_to_float(xq[b].d);
  }
  const __m512i table = shifted_levels(), low = _mm512_set1_epi8(0x0f);
  const int64_t num_pairs = num_blocks / 2;
  for (int64_t g = 0; g < num_groups; ++g) {
    const BlockMXFP4x8* blk = groups + g * num_blocks;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t p = 0; p < num_pairs; ++p) {
      const BlockMXFP4x8& a = blk[2 * p];
      const BlockMXFP4x8& b = blk[2 * p + 1];
      const int8_t* xa = xq[2 * p].qs;
      const int8_t* xb = xq[2 * p + 1].qs;
      __m512i lo_sum = _mm512_setzero_si512(), hi_sum = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int word = 0; word < 4; ++word) {
        const __m512i v = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs[0] + 32 * word))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs[0] + 32 * word)), 1);
        const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, low));
        const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
        const __m512i x_lo = _mm512_inserti64x4(_mm512_set1_epi32(broadcast_word(xa + 4 * word)),
                                                _mm256_set1_epi32(broadcast_word(xb + 4 * word)), 1);
        const __m512i x_hi = _mm512_inserti64x4(_mm512_set1_epi32(broadcast_word(xa + 16 + 4 * word)),
                                                _mm256_set1_epi32(broadcast_word(xb + 16 + 4 * word)), 1);
        lo_sum = _mm512_dpbusd_epi32(lo_sum, lo, x_lo);
        hi_sum = _mm512_dpbusd_epi32(hi_sum, hi, x_hi);
      }
      const __m512i shift = _mm512_inserti64x4(_mm512_set1_epi32(correction[2 * p]),
                                               _mm256_set1_epi32(correction[2 * p + 1]), 1);
      const __m512 isum = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_add_epi32(lo_sum, hi_sum), shift));
      const __m256 scale_a = _mm256_mul_ps(half_scales(a.e), _mm256_set1_ps(dx[2 * p]));
      const __m256 scale_b = _mm256_mul_ps(half_scales(b.e), _mm256_set1_ps(dx[2 * p + 1]));
      acc = _mm256_fmadd_ps(scale_a, _mm512_castps512_ps256(isum), acc);
      acc = _mm256_fmadd_ps(scale_b, _mm512_extractf32x8_ps(isum, 1), acc);
    }
    if (num_blocks % 2 != 0) {  // the last block alone, in a ymm
      const int64_t j = num_blocks - 1;
      const BlockMXFP4x8& a = blk[j];
      const __m256i table8 = _mm512_castsi512_si256(table), low8 = _mm256_set1_epi8(0x0f);
      __m256i lo_sum = _mm256_setzero_si256(), hi_sum = _mm256_setzero_si256();
      for (int word = 0; word < 4; ++word) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.qs[0] + 32 * word));
        const __m256i lo = _mm256_shuffle_epi8(table8, _mm256_and_si256(v, low8));
        const __m256i hi = _mm256_shuffle_epi8(table8, _mm256_and_si256(_mm256_srli_epi16(v, 4), low8));
        lo_sum = _mm256_dpbusd_epi32(lo_sum, lo, _mm256_set1_epi32(broadcast_word(xq[j].qs + 4 * word)));
        hi_sum = _mm256_dpbusd_epi32(hi_sum, hi, _mm256_set1_epi32(broadcast_word(xq[j].qs + 16 + 4 * word)));
      }
      const __m256 isum =
          _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_add_epi32(lo_sum, hi_sum), _mm256_set1_epi32(correction[j])));
      acc = _mm256_fmadd_ps(_mm256_mul_ps(half_scales(a.e), _mm256_set1_ps(dx[j])), isum, acc);
    }
    _mm256_storeu_ps(y + 8 * g, acc);
  }
}

}  // namespace

void matmul_mxfp4x8_decode(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in,
                           int64_t num_tokens) {
  const int64_t num_blocks = num_in / 32;
  if (num_tokens != 1 || num_blocks > kMaxBlocks) return matmul_mxfp4x8(w, x, y, num_out, num_in, num_tokens);
  check_codebook_shape(num_out, num_in, 32, quant::kX8Rows);
  BlockQ8_0 xq[kMaxBlocks];
  avx512::quantize_row_q8_0(x, xq, num_in);
  one_token(static_cast<const BlockMXFP4x8*>(w), xq, y, num_out / quant::kX8Rows, num_blocks);
}

void matmul_mxfp4x8_decode_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                                int64_t num_tokens, int64_t y_stride) {
  const int64_t num_blocks = num_in / 32;
  if (num_tokens != 1 || num_blocks > kMaxBlocks)
    return matmul_mxfp4x8_q8_0(w, xq, y, num_out, num_in, num_tokens, y_stride);
  check_codebook_shape(num_out, num_in, 32, quant::kX8Rows);
  one_token(static_cast<const BlockMXFP4x8*>(w), xq, y, num_out / quant::kX8Rows, num_blocks);
}

}  // namespace pagoda::kernels::avx512
