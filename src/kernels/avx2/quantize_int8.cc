// AVX2 per-token INT8 quantization of an activation row (the activation side of the W8A8 matmul). Same bytes and
// scale as quant::quantize_int8_values for any input without nan: the exact max, the same f32 scale and product
// x * (1/d), roundf's half-away-from-zero rounding done exactly. A row tail shorter than 32 goes through the same
// vector code from a zero-padded copy (zeros change neither the max nor the other values).
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/simd_util.h"
#include "kernels/quant_matmul_support.h"

namespace pagoda::kernels::avx2 {
namespace {

constexpr int64_t kChunk = 32;

// 32 values -> 32 int8 in element order.
inline __m256i round_to_int8(const __m256 (&v)[4], __m256 vid) {
  __m256i q[4];
  for (int k = 0; k < 4; ++k) q[k] = _mm256_cvttps_epi32(round_half_away_q8(_mm256_mul_ps(v[k], vid)));
  // packs interleaves the 128-bit lanes; the permute puts the 32 bytes back in element order.
  const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
  const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
  return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace

float quantize_row_int8(const float* x, int8_t* q, int64_t n) {
  const int64_t num_full = n / kChunk * kChunk;
  const int64_t tail = n - num_full;
  alignas(32) float padded[kChunk] = {};
  if (tail > 0) std::memcpy(padded, x + num_full, size_t(tail) * sizeof(float));

  __m256 vmax = _mm256_setzero_ps();
  for (int64_t i = 0; i < num_full; i += 8) vmax = _mm256_max_ps(vmax, abs_ps(_mm256_loadu_ps(x + i)));
  for (int64_t i = 0; i < kChunk; i += 8) vmax = _mm256_max_ps(vmax, abs_ps(_mm256_load_ps(padded + i)));
  const float amax = hmax_ps(vmax);  // exact: max does not round
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const __m256 vid = _mm256_set1_ps(id);

  __m256 v[4];
  for (int64_t i = 0; i < num_full; i += kChunk) {
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + i + 8 * k);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i), round_to_int8(v, vid));
  }
  if (tail > 0) {
    for (int k = 0; k < 4; ++k) v[k] = _mm256_load_ps(padded + 8 * k);
    alignas(32) int8_t bytes[kChunk];
    _mm256_store_si256(reinterpret_cast<__m256i*>(bytes), round_to_int8(v, vid));
    std::memcpy(q + num_full, bytes, size_t(tail));
  }
  return d;
}

}  // namespace pagoda::kernels::avx2
