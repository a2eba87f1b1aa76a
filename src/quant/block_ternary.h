// ggml's ternary super-blocks (256 values in {-1, 0, 1} times one fp16 scale): TQ1_0 (five values a byte in base 3,
// 1.6875 bits a value) and TQ2_0 (four 2-bit values a byte, 2.0625 bits a value), byte-compatible with GGUF tensors
// of those types, and their reference dequantization (bit-identical to ggml's dequantize_row_tq1_0/tq2_0). No
// kernel and no quantizer: quant/kquant_carrier.h re-encodes them for the Q2_K kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/block_kquants.h"

namespace pagoda::quant {

// TQ1_0: value = d * (t - 1), t in 0..2 a trit. A byte b holds its trits most significant first as a fraction of
// 243: trit n (< 5) is ((uint8_t(b * 3^n)) * 3) >> 8. Values 32n + m (n < 5, m < 32) are trit n of qs[m]; values
// 160 + 16n + m (m < 16) trit n of qs[32 + m]; values 240 + 4n + j (n < 4, j < 4) trit n of qh[j].
struct BlockTQ1_0 {
  uint8_t qs[48];
  uint8_t qh[4];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockTQ1_0) == 54 && alignof(BlockTQ1_0) == 2 && offsetof(BlockTQ1_0, d) == 52);

// TQ2_0: value = d * (q - 1), q the 2-bit field; values 128h + 32g + l (h < 2, g < 4, l < 32) take bits 2g..2g+1 of
// qs[32h + l], Q2_K's placement. (A file made by ggml never holds q = 3; it reads as 2d, as ggml reads it.)
struct BlockTQ2_0 {
  uint8_t qs[kQK_K / 4];
  uint16_t d;  // fp16
};
static_assert(sizeof(BlockTQ2_0) == 66 && alignof(BlockTQ2_0) == 2 && offsetof(BlockTQ2_0, d) == 64);
static_assert(std::is_trivially_copyable_v<BlockTQ1_0> && std::is_trivially_copyable_v<BlockTQ2_0>);

// Trit n (< 5) of a TQ1_0 byte, 0..2.
inline int tq1_0_trit(uint8_t b, int n) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  return (int(uint8_t(b * kPow3[n])) * 3) >> 8;
}
// Block b's 256 trits (0..2) in value order.
void tq1_0_trits(const BlockTQ1_0& b, uint8_t t[kQK_K]);

// x: super-blocks -> y: f32 [n]; n must be a multiple of 256.
void dequantize_row_tq1_0(const BlockTQ1_0* x, float* y, int64_t n);
void dequantize_row_tq2_0(const BlockTQ2_0* x, float* y, int64_t n);

}  // namespace pagoda::quant
