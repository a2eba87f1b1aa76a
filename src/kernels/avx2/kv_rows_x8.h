// KV cache rows read 8 values at a time for the AVX2 attention kernels: each KvDType's values converted to f32 in
// registers as they are loaded (F16C for f16, a shift for bf16, the block's fp16 scale times its int8 or 4-bit values
// for q8_0 and q4_0), and one value at a time for a row's tail. Internal linkage: only avx2/ files include it.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/types.h"

namespace pagoda::kernels::avx2 {
namespace {

// Values i .. i + 7 of a row of type T as f32 (i a multiple of 8; an int8 row's unscaled).
template <KvDType T>
inline __m256 kv_load8(const uint8_t* row, int32_t i) {
  if constexpr (T == KvDType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (T == KvDType::kInt8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + i))));
  } else if constexpr (T == KvDType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
  } else if constexpr (T == KvDType::kBF16) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  } else if constexpr (T == KvDType::kQ8_0) {
    const uint8_t* b = row + int64_t(i / 32) * 34;
    uint16_t d;
    std::memcpy(&d, b, 2);
    const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + i % 32));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(d)), _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
  } else {
    static_assert(T == KvDType::kQ4_0);
    const uint8_t* b = row + int64_t(i / 32) * 18;
    const int32_t j = i % 32;
    uint16_t d;
    std::memcpy(&d, b, 2);
    __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 2 + j % 16));
    if (j >= 16) q = _mm_srli_epi16(q, 4);  // values 16..31: the high nibbles
    q = _mm_and_si128(q, _mm_set1_epi8(0x0f));
    const __m256i v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(q), _mm256_set1_epi32(8));
    return _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(d)), _mm256_cvtepi32_ps(v));
  }
}

// Value i of a row of type T (a tail past the last multiple of 8: only f32, int8, f16 and bf16 rows have one).
template <KvDType T>
inline float kv_value(const uint8_t* row, int32_t i) {
  if constexpr (T == KvDType::kF32) {
    float x;
    std::memcpy(&x, row + 4 * i, 4);
    return x;
  } else if constexpr (T == KvDType::kInt8) {
    return float(int8_t(row[i]));
  } else if constexpr (T == KvDType::kF16 || T == KvDType::kBF16) {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, 2);
    if constexpr (T == KvDType::kF16) return _cvtsh_ss(h);
    const uint32_t bits = uint32_t(h) << 16;
    float x;
    std::memcpy(&x, &bits, 4);
    return x;
  } else {
    alignas(32) float v[8];
    _mm256_store_ps(v, kv_load8<T>(row, i / 8 * 8));
    return v[i % 8];
  }
}

// dst[0 .. n) = a row's n values as f32.
template <KvDType T>
inline void kv_widen_row(const uint8_t* row, float* dst, int32_t n) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, kv_load8<T>(row, i));
  for (; i < n; ++i) dst[i] = kv_value<T>(row, i);
}

}  // namespace
}  // namespace pagoda::kernels::avx2
