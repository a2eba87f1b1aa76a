// quantize_gguf: rewrites a GGUF with its weight matrices in a block-quantized type (Q8_0 or Q4_0, byte-
// compatible with llama.cpp), keeping every metadata key. A tensor is quantized when it is 2-D and its rows
// are whole 32-element blocks; others (norms, odd rows) keep their type: the fallback llama.cpp also uses.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/gguf_types.h"

namespace pagoda::format {

struct QuantizedTensorReport {
  std::string name;
  std::vector<int64_t> dims;
  GgmlType from = GgmlType::kF32;
  GgmlType to = GgmlType::kF32;
  uint64_t bytes_before = 0;
  uint64_t bytes_after = 0;
};

struct QuantizeReport {
  std::vector<QuantizedTensorReport> tensors;
  uint64_t file_bytes_before = 0;
  uint64_t file_bytes_after = 0;
};

struct QuantizeOptions {
  std::string input_path;
  std::string output_path;
  GgmlType type = GgmlType::kQ8_0;  // kQ8_0 or kQ4_0
  // Called after each tensor is written: (tensors done, tensors in all, name).
  std::function<void(int32_t, int32_t, const std::string&)> on_tensor;
};

// Errors: unreadable input, a type other than q8_0/q4_0, an input tensor that is already block-quantized into
// another type, or a failed write.
Result<QuantizeReport> quantize_gguf(const QuantizeOptions& options);

}  // namespace pagoda::format
