// TensorSet: a model's tensors by their GGUF names (llama.cpp's: "blk.0.attn_q.weight") with ggml dim order and
// borrowed data, whatever file they came from (a GGUF, or an HF folder mapped by HfCheckpoint). The one input of
// model_weights_from_tensors. Owns only the index; the data belongs to whoever built it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "format/gguf_reader.h"

namespace pagoda {

struct TensorRef {
  std::optional<DType> dtype;  // nullopt: a type pagoda cannot run (type_name says which)
  std::string type_name;       // "f32", "q4_k", ...
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

  const TensorRef* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
};

// Every tensor of `file`, by name (data stays in its mapping).
TensorSet tensor_set_from_gguf(const format::GgufFile& file);

}  // namespace pagoda
