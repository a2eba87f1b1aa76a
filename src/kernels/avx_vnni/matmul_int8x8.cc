// vpdpbusd matmuls for the signed 8-row interleaved layouts, Q8_0x8 (against Q8_0 activations) and INT8x8 (against
// per-token INT8), quant/block_q8_0x8.h and row_int8x8.h. vpdpbusd multiplies unsigned by signed bytes, so each
// weight word is flipped to w + 128 (an xor with 0x80, once per load, shared by every token), and the accumulator
// starts at -128 x sum(x) to take the 128 x sum(x) back off: sum((w + 128) x) - 128 sum(x) = sum(w x), exactly
// (int32 wraps, and the true sum fits: quant::kMaxInt8RowLength), even for the -128 a foreign file may hold. Then
// the scaling of the scalar references: Q8_0x8 acc = fma(d_w * d_x, float(isum), acc) per block, INT8x8
// float(isum) * (w_scale * x_scale) per row.
#include <immintrin.h>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_q8_0x8.h"
#include "quant/row_int8x8.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

using quant::BlockQ8_0;
using quant::BlockQ8_0x8;

inline __m256i load_offset_weights(const void* p) {
  return _mm256_xor_si256(_mm256_loadu_si256(static_cast<const __m256i*>(p)), _mm256_set1_epi8(char(0x80)));
}

// Q8_0x8: y[t * y_stride + r] for r < 8 = row r of `group` . token t, t < kTokens; x: this token group's packed
// blocks (starts -128 sum(x)).
template <int kTokens>
inline void q8_0_group_times_tokens(const BlockQ8_0x8* group, const uint8_t* x, int64_t num_blocks, float* y,
                                    int64_t y_stride) {
  constexpr int64_t kBlockBytes = packed_q8_block_bytes(kTokenGroup);
  constexpr int kChains = kTokens < 4 ? 2 : 1;  // shorter dependency chains while few tokens interleave theirs
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b, x += kBlockBytes) {
    const BlockQ8_0x8& blk = group[b];
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* d = reinterpret_cast<const float*>(x + kTokenGroup * 32);
    const auto* start = reinterpret_cast<const int32_t*>(x + kTokenGroup * 36);
    __m256i isum[kChains][kTokens];
    for (int t = 0; t < kTokens; ++t) {
      isum[0][t] = _mm256_set1_epi32(start[t]);
      if constexpr (kChains == 2) isum[1][t] = _mm256_setzero_si256();
    }
    for (int word = 0; word < 8; ++word) {
      // 272 bytes per block: one prefetch per 64 (here and after the loop) touches every line of the block ahead.
      if (word % 2 == 0) prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 32 * word);
      const __m256i w = load_offset_weights(blk.qs + 32 * word);
      for (int t = 0; t < kTokens; ++t)
        isum[word % kChains][t] = dpbusd(isum[word % kChains][t], w, broadcast4(qs + 32 * t + 4 * word));
    }
    prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + 256);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.d)));
    for (int t = 0; t < kTokens; ++t) {
      if constexpr (kChains == 2) isum[0][t] = _mm256_add_epi32(isum[0][t], isum[1][t]);
      const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(d[t]));
      acc[t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[0][t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
}

// INT8x8: the same over a whole row; x: this token group's packed words, starts: its tokens' -128 sum(x).
template <int kTokens>
inline void int8_group_times_tokens(const void* group, const uint8_t* x, const float* x_scales, const int32_t* starts,
                                    int64_t num_in, float* y, int64_t y_stride) {
  constexpr int kChains = kTokens < 4 ? 4 / kTokens : 1;  // a row is one long chain per token: split it
  const int8_t* q = quant::int8x8_values(group);
  __m256i acc[kChains][kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[0][t] = _mm256_set1_epi32(starts[t]);
    for (int c = 1; c < kChains; ++c) acc[c][t] = _mm256_setzero_si256();
  }
  int64_t word = 0;
  for (; word + kChains <= num_in / 4; word += kChains) {
    for (int c = 0; c < kChains; ++c) {
      if ((word + c) % 2 == 0) prefetch_weights_ahead(q + 32 * (word + c));
      const __m256i w = load_offset_weights(q + 32 * (word + c));
      for (int t = 0; t < kTokens; ++t)
        acc[c][t] =
            dpbusd(acc[c][t], w, broadcast4(reinterpret_cast<const int8_t*>(x) + 4 * (kTokenGroup * (word + c) + t)));
    }
  }
  for (; word < num_in / 4; ++word) {
    const __m256i w = load_offset_weights(q + 32 * word);
    for (int t = 0; t < kTokens; ++t)
      acc[0][t] = dpbusd(acc[0][t], w, broadcast4(reinterpret_cast<const int8_t*>(x) + 4 * (kTokenGroup * word + t)));
  }
  const __m256 w_scales = _mm256_loadu_ps(quant::int8x8_scales(group));
  for (int t = 0; t < kTokens; ++t) {
    for (int c = 1; c < kChains; ++c) acc[0][t] = _mm256_add_epi32(acc[0][t], acc[c][t]);
    _mm256_storeu_ps(y + t * y_stride, _mm256_mul_ps(_mm256_cvtepi32_ps(acc[0][t]),
                                                     _mm256_mul_ps(w_scales, _mm256_set1_ps(x_scales[t]))));
  }
}

}  // namespace

void matmul_q8_0x8_q8_0(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                        int64_t num_tokens, int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const uint8_t* packed = pack_q8_activations(xq, num_tokens, num_blocks, kTokenGroup, -128);
  const auto* groups = static_cast<const BlockQ8_0x8*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      num_blocks * int64_t(sizeof(*groups)), num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        q8_0_group_times_tokens<kTokens>(groups + g * num_blocks,
                                         packed + t / kTokenGroup * num_blocks * packed_q8_block_bytes(kTokenGroup),
                                         num_blocks, y + t * y_stride + 8 * g, y_stride);
      });
}

void matmul_q8_0x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  matmul_q8_0x8_q8_0(w, quantize_activations_q8_0(avx2::quantize_row_q8_0, x, num_in, num_tokens), y, num_out, num_in,
                     num_tokens, num_out);
}

void matmul_int8x8_int8(const void* w, const int8_t* xq, const float* x_scales, float* y, int64_t num_out,
                        int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  check_int8x8_shape(num_out, num_in);
  const PackedInt8Activations packed = pack_int8_activations(xq, num_tokens, num_in, kTokenGroup, -128);
  const int64_t group_bytes = quant::int8x8_group_bytes(num_in);
  const auto* groups = static_cast<const uint8_t*>(w);
  for_each_row_and_token_group<kTokenGroup>(
      group_bytes, num_out / 8, num_tokens, [&]<int kTokens>(int64_t g, int64_t t) {
        int8_group_times_tokens<kTokens>(groups + g * group_bytes,
                                         packed.words + t / kTokenGroup * num_in * kTokenGroup, x_scales + t,
                                         packed.starts + t, num_in, y + t * y_stride + 8 * g, y_stride);
      });
}

void matmul_int8x8(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {
  const Int8Activations xq = quantize_activations_int8(avx2::quantize_row_int8, x, num_in, num_tokens);
  matmul_int8x8_int8(w, xq.values, xq.scales, y, num_out, num_in, num_tokens, num_out);
}

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
