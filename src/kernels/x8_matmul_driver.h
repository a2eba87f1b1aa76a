// x8_matmul_driver: the one loop of the 8-row interleaved matmuls, the K-quants' against q8_K activations
// (kquant_x8_impl.h) and the 4-bit codebook types' against Q8_0 ones (codebook_x8_impl.h): row groups in units of
// V::kGroups (an odd one left over through Tail, a one-group V of the same instruction set), kPack tokens per pass
// over the packed activations (kernels/packed_activations.h; a lone token, decode, packed alone), and per unit (one
// Block: the same values of 8 rows) the prefetch, one f32 accumulator per token and the stores. What a block holds,
// which activations it reads and how its products reach the accumulators is the block type's X8Body specialization:
//   using Activations = quant::BlockQ8_0 or quant::BlockQ8_K;
//   static void check_shape(num_out, num_in);                      aborts on a shape the layout cannot hold
//   static const uint8_t* pack(const Activations*, num_tokens, num_units, group); this thread's packed activations
//   static constexpr int64_t unit_bytes(int64_t group);            packed bytes of one unit of a token group
//   template <class V, int kPack, int kTokens>
//   static void unit(const Block&, const uint8_t* x, int64_t stride, typename V::F* acc);
// with x the unit's packed activations and stride the bytes from a group's unit to the next group's. V is
// kquant_x8_impl.h's vector abstraction. Include it only from an instruction set's folder (through those headers):
// everything here is in an unnamed namespace, so each compilation keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/packed_activations.h"
#include "kernels/quant_matmul_support.h"
#include "kernels/row_tiling.h"
#include "kernels/x8_prefetch.h"
#include "quant/block_kquant_x8.h"
#include "quant/block_q8_0.h"

namespace pagoda::kernels {
namespace {

template <class Block>
struct X8Body;

inline constexpr int64_t kX8PrefetchBytes = 4096;

// y[t * y_stride + 8 g + r] for r < 8, g < V::kGroups = row r of group g (num_units units, groups num_units apart
// from `groups`) . token t, t < kTokens; x: this token group's packed units.
template <class V, class Block, int kPack, int kTokens>
inline void x8_groups_times_tokens(const Block* groups, const uint8_t* x, int64_t num_units, float* y,
                                   int64_t y_stride) {
  using F = typename V::F;
  using Body = X8Body<Block>;
  constexpr int64_t kUnitBytes = Body::unit_bytes(kPack);
  const int64_t stride = num_units * int64_t(sizeof(Block));
  F acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = V::zero_f();
  constexpr int64_t kBlockBytes = sizeof(Block);
  // Decode (one token, packed alone) reads each row vector once, in order, so a window past a group's end follows
  // its slot into the next vector; a prefill's token groups pass over a tile's vectors again and again
  // (row_tiling.h), the tile already in L2, and there the window stays in memory order (as for one group), adding
  // no lines to L1 beyond the next group's.
  constexpr int kStreamGroups = kPack == 1 ? V::kGroups : 1;
  for (int64_t u = 0; u < num_units; ++u, x += kUnitBytes) {
    const Block& blk = groups[u];
    const X8PrefetchWindow window = x8_prefetch_window(stride, kBlockBytes, u, kStreamGroups, kX8PrefetchBytes);
    const char* ahead = reinterpret_cast<const char*>(&blk) + kX8PrefetchBytes;
    // Only a window that straddles two vectors splits its lines, so every other unit runs one loop of the same
    // length (a loop exit the branch predictor knows).
    const bool straddles = window.split < kBlockBytes;
    for (int g = 0; g < V::kGroups; ++g) {
      int64_t offset = 0;
      if (straddles)
        for (; offset < window.split; offset += 64)
          _mm_prefetch(ahead + g * stride + window.jump_before + offset, _MM_HINT_T0);
      const char* rest = ahead + g * stride + (straddles ? window.jump_after : window.jump_before);
      for (; offset < kBlockBytes; offset += 64) _mm_prefetch(rest + offset, _MM_HINT_T0);
    }
    Body::template unit<V, kPack, kTokens>(blk, x, stride, acc);
  }
  for (int t = 0; t < kTokens; ++t) V::store(y + t * y_stride, acc[t]);
}

template <class V, class Tail, int kPack, class Block>
void x8_matmul_packed(const void* w, const typename X8Body<Block>::Activations* xq, float* y, int64_t num_out,
                      int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  using Body = X8Body<Block>;
  const int64_t num_units = num_in / (32 * Block::kNumBlocks), num_groups = num_out / quant::kX8Rows;
  const auto* groups = static_cast<const Block*>(w);
  const uint8_t* packed = Body::pack(xq, num_tokens, num_units, kPack);
  const int64_t num_vectors = (num_groups + V::kGroups - 1) / V::kGroups;
  for_each_row_and_token_group<kPack>(
      V::kGroups * num_units * int64_t(sizeof(Block)), num_vectors, num_tokens, [&]<int kTokens>(int64_t p, int64_t t) {
        const int64_t g = V::kGroups * p;
        const uint8_t* x = packed + t / kPack * num_units * Body::unit_bytes(kPack);
        float* y_unit = y + t * y_stride + quant::kX8Rows * g;
        if (g + V::kGroups <= num_groups)
          x8_groups_times_tokens<V, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit, y_stride);
        else
          x8_groups_times_tokens<Tail, Block, kPack, kTokens>(groups + g * num_units, x, num_units, y_unit, y_stride);
      });
}

// One token (decode) packs its activations in groups of one, so a unit's are contiguous (a few cache lines) rather
// than spread over the slots of kPack tokens.
template <class V, class Tail, int kPack, class Block>
void x8_matmul_xq(const void* w, const typename X8Body<Block>::Activations* xq, float* y, int64_t num_out,
                  int64_t num_in, int64_t num_tokens, int64_t y_stride) {
  X8Body<Block>::check_shape(num_out, num_in);
  if (num_tokens == 1)
    x8_matmul_packed<V, Tail, 1, Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);
  else
    x8_matmul_packed<V, Tail, kPack, Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);
}

// The f32 entry points' quantizing step, by the activations a level's quantizer writes.
inline const quant::BlockQ8_0* quantize_x8_activations(QuantizeRowQ8_0Fn quantize_row, const float* x, int64_t num_in,
                                                       int64_t num_tokens) {
  return quantize_activations_q8_0(quantize_row, x, num_in, num_tokens);
}
inline const quant::BlockQ8_K* quantize_x8_activations(QuantizeRowQ8_KFn quantize_row, const float* x, int64_t num_in,
                                                       int64_t num_tokens) {
  return quantize_activations_q8_K(quantize_row, x, num_in, num_tokens);
}

}  // namespace
}  // namespace pagoda::kernels

// A matmul's two entry points (matmul_NAME from f32 activations, quantized by QUANTIZE, and matmul_NAME_FORM from
// activations already in the block's form, FORM q8_0 or q8_K), defined in the including file's namespace: V and TAIL
// its vectors (type names: alias a template first), TOKENS its token group.
#define PAGODA_X8_ENTRY(name, FORM, Block, V, TAIL, TOKENS, QUANTIZE)                                                  \
  void matmul_##name(const void* w, const float* x, float* y, int64_t num_out, int64_t num_in, int64_t num_tokens) {   \
    x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, quantize_x8_activations(QUANTIZE, x, num_in, num_tokens), y,        \
                                                num_out, num_in, num_tokens, num_out);                                 \
  }                                                                                                                    \
  void matmul_##name##_##FORM(const void* w, const X8Body<quant::Block>::Activations* xq, float* y, int64_t num_out, \
                              int64_t num_in, int64_t num_tokens, int64_t y_stride) {                                  \
    x8_matmul_xq<V, TAIL, TOKENS, quant::Block>(w, xq, y, num_out, num_in, num_tokens, y_stride);                      \
  }
