// Any GGUF tensor type pagoda reads, as f32: the one table from a ggml type id to the quant module's reference
// dequantizer of its blocks (bit-identical to ggml's dequantize_row_*). The loader converts the types pagoda does
// not run as stored through it (model/tensor_set.h); tests and tools read any tensor through it.
#pragma once

#include <cstdint>

#include "format/gguf_types.h"

namespace pagoda::format {

// True for every ggml type whose rows dequantize_ggml_row can read: the float types, the legacy and K-quants, and
// the i-quants, ternary and 4-bit codebook types (not pagoda's own int8 and AWQ types, whose rows carry extra data).
bool ggml_type_has_dequantizer(GgmlType type);

// True for the types the GGUF reader accepts but no kernel runs as stored, so the loader converts them:
// q8_K (not the types with kernels, or with a carrier: format/ggml_carrier.h).
bool ggml_type_converted_at_load(GgmlType type);

// src: the first n elements of a row of `type` -> dst: f32 [n]. n must be a multiple of ggml_block_size(type);
// checked, as is that the type has a dequantizer.
void dequantize_ggml_row(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace pagoda::format
