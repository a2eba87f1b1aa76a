// GgufWriter: collects metadata and tensors, then writes a GGUF v3 file (little-endian, general.alignment
// honoured, tensor data padded to the alignment). Tensor bytes are borrowed until write() returns.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
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
  // Writes to `path` (via a temporary file renamed into place, so a failed write leaves no half file).
  Status write(const std::string& path) const;
  // The whole file as bytes (for tests).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    const void* data;
    uint64_t size_bytes;
  };
  uint64_t alignment() const;  // general.alignment if set, else 32
  // Everything before the first tensor's data: header, metadata, tensor infos, padding.
  std::vector<uint8_t> header_bytes() const;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace pagoda::format
