// TensorSet: a model's tensors by their GGUF names (llama.cpp's: "blk.0.attn_q.weight") with ggml dim order and
// borrowed data, whatever file they came from (a GGUF, or an HF folder mapped by HfCheckpoint). The one input of
// model_weights_from_tensors. Owns the index and the data of tensors converted at load (`owned`); the rest of the data
// belongs to whoever built it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "format/gguf_reader.h"
#include "quant/block_q8_0.h"

namespace pagoda {

struct TensorRef {
  std::optional<DType> dtype;  // nullopt: a type pagoda cannot run (type_name says which)
  std::string type_name;       // the file's type: "f32", "q4_K", ... (also for a tensor converted at load)
  std::vector<int64_t> dims;   // ggml order: dims[0] innermost
  const void* data = nullptr;
  // Non-empty: the tensor's outermost slices (dims.back() of them: the experts of a stacked expert tensor) each at
  // an address of its own, and data is null (an HF folder keeps every expert's matrix in a tensor of its own).
  std::vector<const void*> slices;
};

struct TensorSet {
  std::string source;  // the file or folder, for messages
  // The data lies in read-only file mappings (not a caller's buffer), so pages nobody reads any more may be dropped
  // from the process without losing anything (model/weight_repack).
  bool file_mapped = false;
  std::map<std::string, TensorRef, std::less<>> tensors;
  // The data of the tensors converted at load, which their TensorRefs point into (ModelWeights keeps a copy of
  // these pointers, so the views outlive the set).
  std::vector<std::shared_ptr<const void>> owned;

  const TensorRef* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

// Every tensor of `file`, by name. Data stays in its mapping (q4_1, q5_1, q2_K ... q6_K, iq4_nl, iq4_xs and mxfp4
// included: their kernels read them as stored, or repacked at load), except for the types no kernel runs as stored
// (format::ggml_type_converted_at_load: q8_K), converted here: each row dequantized exactly
// (format/ggml_dequantize.h), then a matrix (2+ dims) requantized to q8_0 with ggml's rounding (a far finer grid than
// the source's) and a vector kept f32 (so is a matrix beyond q8_0's fp16 scales); and the carried types
// (format::ggml_carrier_type: tq1_0, tq2_0 in q2_K, iq3_*, iq1_* in q6_K, iq2_* in pagoda's q7_K, q5_0 in q8_0),
// re-encoded losslessly into their carrier (a vector, or a block the carrier cannot hold: a non-finite scale, an
// i-quant scale below what the carrier's fp16 holds exactly, is converted instead). TensorRef::type_name keeps the
// file's type.
// `quantize_row_q8_0` does the requantization: quant::quantize_row_q8_0 or a kernel table's SIMD twin (the same
// bytes, kernels/kernels.h): the requantization is most of a conversion's time, and the SIMD one is far quicker.
using QuantizeRowQ8_0Fn = void (*)(const float* x, quant::BlockQ8_0* y, int64_t n);
TensorSet tensor_set_from_gguf(const format::GgufFile& file,
                               QuantizeRowQ8_0Fn quantize_row_q8_0 = quant::quantize_row_q8_0);

// What tensor_set_from_gguf converts in `file`, for the loader's message ("converted at load: 156 tensors (135
// q3_K, 21 iq4_xs) ..."); empty when nothing is.
std::string tensor_conversion_note(const format::GgufFile& file);

}  // namespace pagoda
