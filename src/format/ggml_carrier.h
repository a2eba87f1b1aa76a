// The ggml types pagoda runs through another type's kernels: which carrier type each rides in, and the row
// re-encoding into it (quant/kquant_carrier.h; lossless, so the carrier's values are the file's). The loader
// re-encodes such tensors at load (model/tensor_set.h). Must not hold any arithmetic of its own.
#pragma once

#include <cstdint>
#include <optional>

#include "core/types.h"
#include "format/gguf_types.h"

namespace pagoda::format {

// kQ2_K for tq1_0 and tq2_0, kQ6_K for iq3_xxs, iq3_s, iq1_s and iq1_m, pagoda's in-memory kQ7_K for iq2_xxs,
// iq2_xs and iq2_s, kQ8_0 for q5_0; nullopt for every other type.
std::optional<DType> ggml_carrier_type(GgmlType type);

// src: a row of n values of `type` (a carried type, checked) -> dst: dtype_row_bytes(carrier, n) bytes of the
// carrier. False when a block cannot be carried exactly (a non-finite scale, or an i-quant scale too small for the
// carrier's fp16 d): the caller converts the row otherwise.
bool carry_ggml_row(GgmlType type, const void* src, void* dst, int64_t n);

}  // namespace pagoda::format
