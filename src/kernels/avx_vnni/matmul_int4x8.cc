// vpdpbusd matmuls for the 4-bit row-interleaved layouts, Q4_0x8 and AWQ INT4x8 (quant/block_q4_0x8.h,
// block_awq_int4x8.h), against Q8_0 activations. As in avx2/matmul_int4x8.cc, one 32-byte load holds four values of
// each of eight rows; its low and high nibbles are already the unsigned operand vpdpbusd wants, so each token takes
// one vpdpbusd per nibble half and word (maddubs + add + madd on AVX2), straight into each row's int32 lane with no
// int16 stage. The nibbles' offset (8 for Q4_0, each row's zero point for AWQ) is the accumulator's starting value,
// -offset x sum(x), so the integer sum comes out already corrected and exact. The activations are packed per token
// group first (kernels/packed_activations.h), so the inner loop reads them from one pointer. Then acc = fma(d_w * d_x,
// float(isum), acc) per block: the scalar reference's bits.
#include <immintrin.h>

#include <type_traits>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx_vnni/avx_vnni_kernels.h"
#include "kernels/avx_vnni/vnni_util.h"
#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_awq_int4x8.h"
#include "quant/block_q4_0x8.h"

namespace pagoda::kernels::PAGODA_KERNEL_NS {
namespace {

using quant::BlockAwqInt4x8;
using quant::BlockQ4_0x8;
using quant::BlockQ8_0;

// y[t * y_stride + 8 j + r] for r < 8 = row r of group j (kGroups of them, num_blocks apart) . token t, t <
// kTokens; x: this token group's packed blocks (kernels/packed_activations.h: starts are -sum(x), times 8 for
// Q4_0). Two row groups per pass share each activation broadcast, halving the loads per vpdpbusd.
template <class Block, int kPack, int kTokens, int kGroups>
inline void groups_times_tokens(const Block* group, const uint8_t* x, int64_t num_blocks, float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = packed_q8_block_bytes(kPack);
  const __m256i low = _mm256_set1_epi8(0x0f);
  __m256 acc[kGroups][kTokens];
  for (int j = 0; j < kGroups; ++j)
    for (int t = 0; t < kTokens; ++t) acc[j][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b, x += kBlockBytes) {
    const auto* qs = reinterpret_cast<const int8_t*>(x);
    const auto* d = reinterpret_cast<const float*>(x + kPack * 32);
    const auto* start = reinterpret_cast<const int32_t*>(x + kPack * 36);
    __m256i isum[kGroups][kTokens];
    for (int j = 0; j < kGroups; ++j) {
      const Block& blk = group[j * num_blocks + b];
      for (size_t offset = 0; offset < sizeof(Block); offset += 48)
        prefetch_weights_ahead(reinterpret_cast<const char*>(&blk) + offset);
      for (int t = 0; t < kTokens; ++t) {
        if constexpr (std::is_same_v<Block, BlockAwqInt4x8>) {
          const __m256i zeros = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.zero)));
          isum[j][t] = _mm256_mullo_epi32(zeros, _mm256_set1_epi32(start[t]));
        } else {
          isum[j][t] = _mm256_set1_epi32(start[t]);
        }
      }
    }
    for (int word = 0; word < 4; ++word) {
      __m256i lo[kGroups], hi[kGroups];
      for (int j = 0; j < kGroups; ++j) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(group[j * num_blocks + b].qs + 32 * word));
        lo[j] = _mm256_and_si256(v, low);
        hi[j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
      }
      for (int t = 0; t < kTokens; ++t) {
        const __m256i x_lo = broadcast4(qs + 32 * t + 4 * word), x_hi = broadcast4(qs + 32 * t + 16 + 4 * word);
        for (int j = 0; j < kGroups; ++j) {
          isum[j][t] = dpbusd(isum[j][t], lo[j], x_lo);
          isum[j][t] = dpbusd(isum[j][t], hi[j], x_hi);
        }
      }
    }
    for (int j = 0; j < kGroups; ++j) {
      const __m256 dw =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group[j * num_blocks + b].d)));
      for (int t = 0; t < kTokens; ++t) {
        const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(d[t]));
        acc[j][t] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(isum[j][t]), acc[j][t]);
      }
    }
  }
  for (int j = 0; j < kGroups; ++j)
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + t * y_stride + 8 * j, acc[j][t]);
}

// Tokens per pass when two row groups share it: half the single group's, so the accumulators still fit.
inline constexpr int kPairTokenGroup = kTokenGroup / 2;

// All row groups for the tokens, kGroups row groups and kPack tokens per pass.
template <class Block, int kPack, int kGroups>
void matmul_packed(const Block* groups, const BlockQ8_0* xq, float* y, int64_t num_groups, int64_t num_blocks,
                   int64_t num_tokens, int64_t y_stride) {
  constexpr int32_t kStartScale = std::is_same_v<Block, BlockQ4_0x8> ? -8 : -1;
  const uint8_t* packed = pack_q8_activations(xq, num_tokens, num_blocks, kPack, kStartScale);
  // Units of kGroups row groups (the last one short when they do not divide num_groups).
  const int64_t num_units = (num_groups + kGroups - 1) / kGroups;
  for_each_row_and_token_group<kPack>(
      kGroups * num_blocks * int64_t(sizeof(Block)), num_units, num_tokens, [&]<int kTokens>(int64_t u, int64_t t) {
        const int64_t g = kGroups * u;
        const uint8_t* x = packed + t / kPack * num_blocks * packed_q8_block_bytes(kPack);
        float* y_unit = y + t * y_stride + 8 * g;
        if (g + kGroups <= num_groups)
          groups_times_tokens<Block, kPack, kTokens, kGroups>(groups + g * num_blocks, x, num_blocks, y_unit, y_stride);
        else
          groups_times_tokens<Block, kPack, kTokens, 1>(groups + g * num_blocks, x, num_blocks, y_unit, y_stride);
      });
}

template <class Block>
void matmul_xq(const void* w, const BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens,
               int64_t y_stride) {
  check_x8_block_shape(num_out, num_in);
  const int64_t num_blocks = num_in / BlockQ8_0::kNumValues;
  const auto* groups = static_cast<const Block*>(w);
  // Decode and small batches: one row group per pass, its weights unpacked once for all the tokens; larger
  // batches: two row groups per pass, sharing each activation broadcast.
  if (num_tokens < kTokenGroup)
    matmul_packed<Block, kTokenGroup, 1>(groups, xq, y, num_out / 8, num_blocks, num_tokens, y_stride);
  else
    matmul_packed<Block, kPairTokenGroup, 2>(groups, xq, y, num_out / 8, num_blocks, num_tokens, y_stride);
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

}  // namespace pagoda::kernels::PAGODA_KERNEL_NS
