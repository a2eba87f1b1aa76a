// quantize_gguf_llama: rewrites an f32/f16/bf16 GGUF as llama-quantize writes a file type (Q4_K_M, Q6_K, Q8_0, ...):
// its per-tensor type mixture (llama_quant_mixture.h), its tensor order and metadata (every key kept,
// general.quantization_version and general.file_type set last, split keys dropped), ggml's quantizers bit for bit,
// and, with an importance matrix, ggml's weighted quantizers and llama-quantize's quantize.imatrix.* keys. Without
// an importance matrix the file is byte-identical to llama-quantize's. Pagoda's own types stay in gguf_quantizer.h.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <string>

#include "format/gguf_quantizer.h"
#include "format/imatrix_reader.h"
#include "format/llama_quant_mixture.h"

namespace pagoda::format {

struct LlamaQuantizeOptions {
  std::string input_path;
  std::string output_path;
  LlamaFileType file_type = LlamaFileType::kQ8_0;
  // Borrowed, may be nullptr. imatrix_path is what quantize.imatrix.file records.
  const ImportanceMatrix* imatrix = nullptr;
  std::string imatrix_path;
  // Called after each tensor is written: (tensors done, tensors in all, name).
  std::function<void(int32_t, int32_t, const std::string&)> on_tensor;
};

// Errors: unreadable input, a tensor to quantize that is not f32/f16/bf16, an importance entry whose size does not
// match its tensor (token_embd's is ignored, as llama-quantize ignores it), a failed write. The report lists the
// tensors in the order written, with `awq_*` unset.
Result<QuantizeReport> quantize_gguf_llama(const LlamaQuantizeOptions& options);

}  // namespace pagoda::format
