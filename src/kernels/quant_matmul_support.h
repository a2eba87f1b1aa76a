// The non-SIMD helpers shared by the scalar and AVX2 quantized matmuls: the per-thread Q8_0 and INT8 scratch that
// activations are quantized into, and the shape checks. They live outside avx2/ so that no inline code compiled
// with -mavx2 (fmt, std::vector) can be merged by the linker into callers that run on any CPU.
#pragma once

#include <cstdint>

#include "quant/block_q8_0.h"
#include "quant/block_q8_K.h"
#include "quant/row_int8.h"

namespace pagoda::kernels {

// Aborts (a caller bug) unless num_in is a whole number of 32-value blocks.
void check_quant_row_length(int64_t num_in);
// Aborts unless num_in is a whole number of AWQ groups of `group` values.
void check_group_row_length(int64_t num_in, int64_t group);

// Aborts unless 0 < num_in <= quant::kMaxInt8RowLength (the int32 dot products stay exact).
void check_int8_row_length(int64_t num_in);

// Aborts unless a Q4_0x8, Q8_0x8 or AWQ INT4x8 matmul's shape is whole groups of 8 rows and whole 32-value blocks
// (of group_rows rows for the x16 layouts).
void check_x8_block_shape(int64_t num_out, int64_t num_in, int64_t group_rows = 8);

// Aborts unless a K-quant matmul's rows are whole 256-value super-blocks and num_out whole groups of group_rows.
void check_kquant_shape(int64_t num_out, int64_t num_in, int64_t group_rows);
// Aborts unless a 4-bit codebook matmul's rows are whole blocks of block_values (32, or IQ4_XS's 256) and num_out
// whole groups of group_rows.
void check_codebook_shape(int64_t num_out, int64_t num_in, int64_t block_values, int64_t group_rows);

// Aborts unless an INT8x8 matmul's shape is whole groups of 8 rows (group_rows for INT8x16) and rows of whole 4-value
// words (and no longer than quant::kMaxInt8RowLength).
void check_int8x8_shape(int64_t num_out, int64_t num_in, int64_t group_rows = 8);

// What the 4-bit row-interleaved matmuls need of each activation block besides its integers: d as f32, and the
// sum of its 32 values (for the unsigned nibbles' offset: sum((q - z) x) = sum(q x) - z sum(x), z = 8 for Q4_0).
struct Q8BlockSums {
  float d;
  int32_t sum;  // times the layout's fixed offset where it has one (8 for Q4_0), so the kernel loads it as is
};
// Per-thread room for num_blocks of them, grow-only as activation_scratch_q8_0.
Q8BlockSums* activation_sums_scratch(int64_t num_blocks);

// Per-thread room for `bytes` of activations rearranged the way a kernel reads them (64-byte aligned, grow-only as
// activation_scratch_q8_0; its own buffer, so it never invalidates the others). Valid until the next call on the
// same thread.
void* packed_activation_scratch(int64_t bytes);

// Per-token INT8 activations: values int8 [num_tokens, num_in], scales f32 [num_tokens].
struct Int8Activations {
  int8_t* values;
  float* scales;
};

// Room for num_tokens rows of num_in activations as Q8_0 blocks: [num_tokens, num_in / 32]. The buffer is
// thread_local and only ever grows, so a thread allocates once per new largest shape and never on a steady-state
// step; the MatmulFn signature has no workspace argument, and one buffer per thread keeps concurrent matmuls on
// a thread pool apart. Valid until the next call on the same thread.
quant::BlockQ8_0* activation_scratch_q8_0(int64_t num_tokens, int64_t num_in);
// x: f32 [num_tokens, num_in] -> Q8_0 [num_tokens, num_in / 32] in this thread's scratch (above), each row by
// `quantize_row` (the table's own quantizer, so a matmul's f32 entry point sees exactly the bytes its Q8_0 entry
// point would be given). Valid until the next call on the same thread.
using QuantizeRowQ8_0Fn = void (*)(const float* x, quant::BlockQ8_0* y, int64_t n);
const quant::BlockQ8_0* quantize_activations_q8_0(QuantizeRowQ8_0Fn quantize_row, const float* x, int64_t num_in,
                                                  int64_t num_tokens);
// The same for the K-quants' q8_K activations: [num_tokens, num_in / 256] blocks in this thread's own q8_K scratch
// (num_in a multiple of 256), each row by `quantize_row`.
using QuantizeRowQ8_KFn = void (*)(const float* x, quant::BlockQ8_K* y, int64_t n);
const quant::BlockQ8_K* quantize_activations_q8_K(QuantizeRowQ8_KFn quantize_row, const float* x, int64_t num_in,
                                                  int64_t num_tokens);
// The same for per-token INT8 activations, each row by `quantize_row` (values and scale), into the INT8 scratch.
using QuantizeRowInt8Fn = float (*)(const float* x, int8_t* q, int64_t n);
Int8Activations quantize_activations_int8(QuantizeRowInt8Fn quantize_row, const float* x, int64_t num_in,
                                          int64_t num_tokens);
// The INT8 scratch itself (its own buffers, so it never invalidates the Q8_0 scratch).
Int8Activations activation_scratch_int8(int64_t num_tokens, int64_t num_in);

}  // namespace pagoda::kernels
