// SafetensorsFile / SafetensorsCheckpoint: Hugging Face safetensors weights over memory mappings (no copy).
// SafetensorsFile owns one mapping and its parsed header; SafetensorsCheckpoint owns every shard of a model
// folder (`model.safetensors`, or the shards `model.safetensors.index.json` names). Invariant after a
// successful open: every tensor's bytes lie inside its file and match dtype x shape exactly. Knows nothing of
// model architectures or tensor names.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"
#include "format/mapped_file.h"

namespace pagoda::format {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;   // F32, F16 or BF16; meaningless when `bytes` is set
  // U8: raw bytes with no number type of pagoda's (gpt-oss's MXFP4 blocks and scales), read only by a family that
  // names them so.
  bool bytes = false;
  std::vector<int64_t> shape;  // row-major, outermost first (PyTorch order; the reverse of ggml's)
  const void* data = nullptr;  // into the mapping
  uint64_t size_bytes = 0;
  const std::string* file = nullptr;  // path of the file holding it (for messages)

  int64_t num_elements() const;
};

class SafetensorsFile {
 public:
  // Errors name the file and, where one is at fault, the tensor: "x.safetensors: tensor 'a.weight':
  // data_offsets [0, 96] need 96 bytes but dtype F32 x shape [4, 4] is 64".
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // Parses a buffer the caller keeps alive (tests, fuzzing).
  static Result<std::unique_ptr<SafetensorsFile>> from_memory(std::span<const uint8_t> bytes, std::string name);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  Status parse(std::span<const uint8_t> bytes);
  std::unique_ptr<MappedFile> mapping_;
  std::string path_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

class SafetensorsCheckpoint {
 public:
  // `dir` holds model.safetensors.index.json (sharded) or model.safetensors. A shard the index names that is
  // missing, or a tensor missing from the shard the index names, is an error naming both.
  static Result<SafetensorsCheckpoint> open_folder(const std::string& dir);

  const SafetensorsTensor* find(const std::string& name) const;
  const std::vector<std::unique_ptr<SafetensorsFile>>& files() const { return files_; }
  // "DIR/model-00001-of-00002.safetensors, DIR/model-00002-of-00002.safetensors": where the tensors come from.
  std::string describe() const;

  SafetensorsCheckpoint(SafetensorsCheckpoint&&) = default;
  SafetensorsCheckpoint& operator=(SafetensorsCheckpoint&&) = default;

 private:
  SafetensorsCheckpoint() = default;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsTensor*, std::less<>> by_name_;
};

// "F32", "F16", "BF16" <-> DType; nullopt for other safetensors dtypes.
std::optional<DType> safetensors_dtype(const std::string& name);
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace pagoda::format
