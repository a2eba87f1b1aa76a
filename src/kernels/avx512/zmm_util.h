// Helpers of the avx512/ kernels: 4-byte broadcasts into zmm, tokens per pass, the weight prefetch. Internal
// linkage (an unnamed namespace), so no copy compiled with -mavx512* is ever merged with another folder's.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace pagoda::kernels::avx512 {
namespace {

// Tokens per pass over a weight block: an int32 and an f32 accumulator each, 16 of the 32 zmm registers.
inline constexpr int kTokenGroup = 8;

// The 4 bytes at p in every 32-bit lane.
inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// As the other levels' kernels (avx2/simd_util.h): 2 KiB ahead of the weight read.
inline constexpr int64_t kWeightPrefetchBytes = 2048;
inline void prefetch_weights_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kWeightPrefetchBytes, _MM_HINT_T0);
}

}  // namespace
}  // namespace pagoda::kernels::avx512
