// GgufWriter: collects metadata and tensors, then writes a GGUF v3 file (little-endian, general.alignment
// honoured, tensor data padded to the alignment). Tensor bytes are borrowed until write() returns.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "format/gguf_types.h"

namespace pagoda::format {

class GgufWriter {
 public:
  // Metadata keeps insertion order; setting an existing key replaces its value in place. A value that does not
  // fit its type, an array element of another type, or a general.alignment that is not a u32 power of two is a
  // caller bug (PAGODA_CHECK).
  void set(const std::string& key, GgufValue value);
  // dims in ggml order (dims[0] innermost). `data` must hold ggml_row_bytes(type, dims[0]) * rows bytes and
  // stay alive until write() returns. Any ggml type is accepted (quantized sizes use ggml's block layouts);
  // 1..4 positive dims, a unique name under 64 bytes and an exact size_bytes are checked (PAGODA_CHECK).
  void add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims, const void* data,
                  uint64_t size_bytes);
  // Fills `dst` (size_bytes bytes) with a tensor's data when the file is written.
  using TensorFill = std::function<void(std::span<uint8_t> dst)>;
  // Like add_tensor, but the data is produced by `fill` during write()/to_bytes(), one tensor at a time, so a
  // file far bigger than memory (a random-weight 7B model) can be written with one tensor's worth of RAM.
  void add_tensor_generated(const std::string& name, GgmlType type, std::vector<int64_t> dims, uint64_t size_bytes,
                            TensorFill fill);
  // Writes to `path` (via a temporary file renamed into place, so a failed write leaves no half file).
  Status write(const std::string& path) const;
  // The whole file as bytes (for tests).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    const void* data;  // borrowed bytes, or null when `fill` produces them
    uint64_t size_bytes;
    TensorFill fill;
  };
  void check_new_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims,
                        uint64_t size_bytes) const;
  // The tensor's bytes: its borrowed data, or `scratch` filled by its generator.
  static const uint8_t* tensor_data(const PendingTensor& t, std::vector<uint8_t>& scratch);
  uint64_t alignment() const;  // general.alignment if set, else 32
  // Everything before the first tensor's data: header, metadata, tensor infos, padding.
  std::vector<uint8_t> header_bytes() const;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace pagoda::format
