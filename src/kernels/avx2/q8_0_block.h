// The AVX2 Q8_0 quantization of one 32-value block held in four registers, shared by the plain row quantizer
// and the RMSNorm that quantizes as it normalizes, so both write the same bytes as quant::quantize_row_q8_0.
// Its rounding helpers (abs_ps, hmax_ps, round_half_away_q8) live in simd_util.h with the INT8 quantizer's.
// Only avx2/ files may include this (it is compiled with -mavx2).
#pragma once

#include <immintrin.h>

#include "kernels/avx2/simd_util.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels::avx2 {

// v[0..3]: the block's 32 values in element order -> out.
inline void quantize_block_q8_0(const __m256 v[4], quant::BlockQ8_0& out) {
  const __m256 m01 = _mm256_max_ps(abs_ps(v[0]), abs_ps(v[1]));
  const __m256 m23 = _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3]));
  const float amax = hmax_ps(_mm256_max_ps(m01, m23));  // exact: max does not round
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  // F16C rounds to nearest even, overflows to inf and keeps subnormals, exactly as float_to_fp16 does.
  out.d = uint16_t(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
  const __m256 vid = _mm256_set1_ps(id);
  __m256i q[4];
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvttps_epi32(round_half_away_q8(_mm256_mul_ps(v[k], vid)));
  // packs interleaves the 128-bit lanes; the permute puts the 32 bytes back in element order.
  const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i bytes =
      _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.qs), bytes);
}

}  // namespace pagoda::kernels::avx2
