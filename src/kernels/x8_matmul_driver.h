// x8_matmul_driver: the loop of the 8-row interleaved matmuls against Q8_0 activations (the 4-bit codebook types',
// codebook_x8_impl.h; the K-quants read q8_K and have their own in kquant_x8_impl.h): row groups in units of
// V::kGroups (an odd one left over through Tail, a one-group V of the same instruction set), kPack tokens per pass over the packed
// activations (kernels/packed_activations.h), and per unit of Block (Block::kNumBlocks 32-value blocks of 8 rows)
// the prefetch, one f32 accumulator per token and the stores. What a block holds and how its products reach the
// accumulators is the block type's X8Body specialization:
//   static void check_shape(num_out, num_in);                       aborts on a shape the layout cannot hold
//   template <class V> static U unit(const Block&, int64_t stride); the unit's values every block uses (its d)
//   template <class V, int kPack, int kTokens>
//   static void block(const Block&, const U&, int j, const uint8_t* x, int64_t stride, typename V::F* acc);
// with x block j's packed activations and stride the bytes from a group's unit to the next group's. V is
// kquant_x8_impl.h's vector abstraction. Include it only from an instruction set's folder (through those headers):
// everything here is in an unnamed namespace, so each compilation keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "quant/block_kquant_x8.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels {
namespace {

template <class Block>
struct X8Body;

inline constexpr int64_t kX8PrefetchBytes = 2048;

// y[t * y_stride + 8 g + r] for r < 8, g < V::kGroups = row r of group g (num_units units, groups num_units apart
// from `groups`) . token t, t < kTokens; x: this token group's packed blocks.
template <class V, class Block, int kPack, int kTokens>
inline void x8_groups_times_tokens(const Block* groups, const uint8_t* x, int64_t num_units, float* y,
                                   int64_t y_stride) {
  using F = typename V::F;
  using Body = X8Body<Block>;
  constexpr int64_t kBlockBytes = packed_kquant_block_bytes(kPack);
  const int64_t stride = num_units * int64_t(sizeof(Block));
  F acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = V::zero_f();
  for (int64_t u = 0; u < num_units; ++u) {
    const Block& blk = groups[u];
    for (int g = 0; g < V::kGroups; ++g)
      for (int64_t offset = 0; offset < int64_t(sizeof(Block)); offset += 64)
        _mm_prefetch(reinterpret_cast<const char*>(&blk) + g * stride + offset + kX8PrefetchBytes, _MM_HINT_T0);
    const auto unit = Body::template unit<V>(blk, stride);
    for (int j = 0; j < Block::kNumBlocks; ++j, x += kBlockBytes)
      Body::template block<V, kPack, kTokens>(blk, unit, j, x, stride, acc);
  }
  for (int t = 0; t < kTokens; ++t) V::store(y + t * y_stride, acc[t]);
}

template <class V, class Tail, int kPack, class Block>
void x8_matmul_xq(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,
                  int64_t num_tokens, int64_t y_stride) {
  X8Body<Block>::check_shape(num_out, num_in);
  constexpr int64_t kValues = 32 * Block::kNumBlocks;
  const int64_t num_units = num_in / kValues, num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  const int64_t num_groups = num_out / quant::kX8Rows;
  const auto* groups = static_cast<const Block*>(w);
  const uint8_t* packed = pack_kquant_activations(xq, num_tokens, num_blocks, kPack);
  const int64_t num_vectors = (num_groups + V::kGroups - 1) / V::kGroups;
  for_each_row_and_token_group<kPack>(
      V::kGroups * num_units * int64_t(sizeof(Block)), num_vectors, num_tokens, [&]<int kTokens>(int64_t p, int64_t t) {
        const int64_t g = V::kGroups * p;
        const uint8_t* x = packed + t / kPack * num_blocks * packed_kquant_block_bytes(kPack);
        float* y_unit = y + t * y_stride + quant::kX8Rows * g;
        if (g + V::kGroups <= num_groups)
          x8_groups_times_tokens<V, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit, y_stride);
        else
          x8_groups_times_tokens<Tail, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit, y_stride);
      });
}

}  // namespace
}  // namespace pagoda::kernels

// A matmul's two entry points (matmul_NAME from f32 activations, matmul_NAME_q8_0 from quantized ones), defined in
// the including file's namespace: V and TAIL its vectors (type names: alias a template first), TOKENS its token
// group, QUANTIZE its quantize_row_q8_0.
#define PAGODA_X8_ENTRY(name, Block, V, TAIL, TOKENS, QUANTIZE)                                                      \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) { \
    x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, quantize_activations_q8_0(QUANTIZE, x, num_in, num_tokens), y,    \
                                                num_out, num_in, num_tokens, num_out);                               \
  }                                                                                                                  \
  void matmul_##name##_q8_0(const void* w, const quant::BlockQ8_0* xq, float* y, int64_t num_out, int64_t num_in,    \
                            int64_t num_tokens, int64_t y_stride) {                                                  \
    x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);                    \
  }
