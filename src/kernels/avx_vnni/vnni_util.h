// Helpers of the avx_vnni/ kernels: the vpdpbusd of whichever encoding this compilation targets, 4-byte
// broadcasts, the number of tokens a kernel keeps in registers, and the weight prefetch. Internal linkage
// (an unnamed namespace): this folder is compiled twice with different -m flags, and no copy of these may be
// merged with another compilation's or another folder's.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

// acc + the four u8 x s8 products of each 32-bit lane (wrapping int32, never saturating).
inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  return _mm256_dpbusd_epi32(acc, u8, s8);
#else
  return _mm256_dpbusd_avx_epi32(acc, u8, s8);
#endif
}

// Tokens per pass over a weight block: each keeps an int32 and an f32 accumulator in registers, so the 16 ymm
// registers of the VEX encoding hold 4, and the 32 of the EVEX one hold 8.
// (PAGODA_VNNI_TOKEN_GROUP overrides it for the test build that runs the VEX compilation's group sizes through the
// EVEX encoding: src/kernels/CMakeLists.txt.)
#if defined(PAGODA_VNNI_TOKEN_GROUP)
inline constexpr int kTokenGroup = PAGODA_VNNI_TOKEN_GROUP;
#elif defined(__AVX512VL__)
inline constexpr int kTokenGroup = 8;
#else
inline constexpr int kTokenGroup = 4;
#endif

// The 4 bytes at p in every 32-bit lane.
inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

inline int32_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// The sum of the 32 int8 at p (one vpdpbusd with ones).
inline int32_t sum_32_int8(const int8_t* p) {
  const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return hsum_epi32(dpbusd(_mm256_setzero_si256(), _mm256_set1_epi8(1), x));
}

// Ahead of the weight read, as the AVX2 kernels do (avx2/simd_util.h: 2 KiB beat 1 and 4 on decode).
inline constexpr int64_t kWeightPrefetchBytes = 2048;
inline void prefetch_weights_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kWeightPrefetchBytes, _MM_HINT_T0);
}

}  // namespace
}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
