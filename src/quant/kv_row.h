// KV rows in the cache's packed types (core/types.h's KvDType: f32, f16, bf16, q8_0, q4_0): the scalar conversion of
// a row of f32 values into its bytes as the model writes a token's K or V, and back (the naive attention's reads and
// the tests' oracle). q8_0 and q4_0 are ggml's blocks (block_q8_0.h, block_q4_0.h); kInt8 rows are kv_int8.h's.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace pagoda {

// x: f32 [n] -> `row`: kv_row_bytes(type, n) bytes; n a multiple of kv_dtype_block_values(type); type not kInt8.
void quantize_kv_row(KvDType type, const float* x, int32_t n, uint8_t* row);
// The inverse (exact for f32; the stored values for the others).
void dequantize_kv_row(KvDType type, const uint8_t* row, int32_t n, float* x);

}  // namespace pagoda
