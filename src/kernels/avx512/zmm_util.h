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

// How far ahead of the weight read to prefetch. The other levels' 2 KiB (avx2/simd_util.h) was tuned when decode
// read 6.75 GB/s per thread; the 16-row kernels read Q4_0 several times faster, and at 25 GB/s per thread 2 KiB is
// 80 ns, less than a DRAM access takes. Decode-sized calls (1-2 tokens, the weights streamed from DRAM) reach 4 KiB
// ahead: the llama2-7b 8-layer cut decoded 15.0 against 12.9 tok/s (mean of 6 alternating runs, best 17.5 against
// 15.8; a loaded Zen 4). Larger token groups, whose tiles come from L2, keep 2 KiB: 4 KiB cost them up to 7% of
// TinyLlama's pp256 in the same runs.
template <int kTokens>
inline constexpr int64_t kWeightPrefetchBytes = kTokens <= 2 ? 4096 : 2048;
template <int kTokens>
inline void prefetch_weights_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kWeightPrefetchBytes<kTokens>, _MM_HINT_T0);
}

}  // namespace
}  // namespace pagoda::kernels::avx512
