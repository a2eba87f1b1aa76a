// quantize_gguf: rewrites a GGUF with its weight matrices in a quantized type, keeping every metadata key:
// Q8_0 or Q4_0 (byte-compatible with llama.cpp), or pagoda's INT8 per-channel or AWQ INT4 (README "Weight
// types"). Only 2-D f32/f16/bf16 tensors are quantized, each to the requested type if its rows fit it, else to
// the nearest type that does, else not at all (norms, rows such as a 172-wide ffn_down for the block types):
//   q8_0, q4_0   rows of whole 32-value blocks, else the source type (llama.cpp's fallback);
//   int8         any row (up to quant::kMaxInt8RowLength values);
//   awq_int4_gG  the largest group of 128, 64, 32 that is at most G and divides the row, else the source type.
// AWQ weights with calibration statistics get the activation-aware scale s of quant/awq_scale_search.h and its
// per-group clipping: the weight is stored as Q(clip(W diag(s))) and s^-1 as the f32 tensor
// awq_input_scale_name(weight), written right after it. token_embd.weight never gets one (an embedding lookup is no
// matmul).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/gguf_types.h"
#include "quant/awq_scale_search.h"

namespace pagoda::format {

struct QuantizedTensorReport {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType from = GgmlType::kF32;
  GgmlType to = GgmlType::kF32;
  uint64_t bytes_before = 0;  // 0 for a tensor the quantizer added (an AWQ input scale)
  uint64_t bytes_after = 0;
  // AWQ weights with calibration statistics: the chosen alpha and the calibration output MSE per element of the
  // stored weights (s and clipping), with s alone, and of plain group quantization (s = 1, no clipping).
  bool has_awq_scale = false;
  float awq_alpha = 0.0f;
  double awq_mse = 0.0;
  double awq_mse_scaled = 0.0;
  double awq_mse_unscaled = 0.0;
};

struct QuantizeReport {
  std::vector<QuantizedTensorReport> tensors;
  uint64_t file_bytes_before = 0;
  uint64_t file_bytes_after = 0;
};

// What calibration saw at the input of each weight, by tensor name.
using CalibrationStats = std::map<std::string, quant::LinearInputStats>;

struct QuantizeOptions {
  std::string input_path;
  std::string output_path;
  // kQ8_0, kQ4_0, kPagodaInt8, or kPagodaAwqInt4G32 / G64 / G128 (the largest group a tensor may get).
  GgmlType type = GgmlType::kQ8_0;
  // Called after each tensor is written: (tensors done, tensors in all, name).
  std::function<void(int32_t, int32_t, const std::string&)> on_tensor;
  // AWQ only, borrowed, may be nullptr: without statistics for a tensor it is plain group quantization (s = 1).
  const CalibrationStats* calibration = nullptr;
};

// The type `quantize_gguf` gives a tensor of shape `dims` (GGUF order, dims[0] = row length) and type `from`
// when `requested` is asked for: `from` itself when it stays as it is.
GgmlType quantized_type_for(const std::vector<int64_t>& dims, GgmlType from, GgmlType requested);

// Errors: unreadable input, a type that is not one of the above, an input tensor that is already quantized
// into another type, calibration statistics whose shape does not match the tensor, or a failed write.
Result<QuantizeReport> quantize_gguf(const QuantizeOptions& options);

}  // namespace pagoda::format
