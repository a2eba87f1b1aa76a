// SafetensorsWriter: collects tensors, then writes one .safetensors file (header JSON padded with spaces to 8
// bytes, so every tensor's data is 8-byte aligned when sizes are). Tensor data is produced by a fill callback
// during write(), one tensor at a time, so a multi-GB file needs one tensor's worth of memory.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace pagoda::format {

class SafetensorsWriter {
 public:
  using TensorFill = std::function<void(std::span<uint8_t> dst)>;
  // dtype F32, F16 or BF16; shape row-major (PyTorch order). A duplicate name is a caller bug (PAGODA_CHECK).
  void add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape, TensorFill fill);
  // A tensor of raw bytes (safetensors' U8: gpt-oss's MXFP4 blocks and scales).
  void add_byte_tensor(const std::string& name, std::vector<int64_t> shape, TensorFill fill);
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // Written via a temporary file renamed into place.
  Status write(const std::string& path) const;

 private:
  void add_pending(const std::string& name, std::string dtype, uint64_t element_bytes, std::vector<int64_t> shape,
                   TensorFill fill);
  struct PendingTensor {
    std::string name;
    std::string dtype;  // safetensors' name
    std::vector<int64_t> shape;
    uint64_t size_bytes;
    TensorFill fill;
  };
  std::vector<PendingTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace pagoda::format
