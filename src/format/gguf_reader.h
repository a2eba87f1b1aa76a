// GgufFile: a parsed, validated GGUF file (versions 2 and 3) over a memory-mapped file or a caller-owned buffer.
// Owns the mapping and the parsed metadata; tensor data is never copied: GgufTensorInfo::data points into the
// mapping. Invariant after a successful open: every tensor's [offset, offset + size_bytes) lies inside the
// file, is aligned to general.alignment, and has a supported type. A split model (gguf_split.h) opened by its first
// file is one GgufFile: the first split's metadata, every split's tensors (each `data` into its own split's mapping,
// `offset` relative to that split's data section), all mappings owned here.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_types.h"
#include "format/mapped_file.h"

namespace pagoda::format {

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<int64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) dimension
  uint64_t offset = 0;        // bytes from the start of the data section
  uint64_t size_bytes = 0;
  const void* data = nullptr;  // into the mapping

  int64_t num_elements() const;
};

class GgufFile {
 public:
  // Maps and parses `path`, and the other files of its split set when it is the first of one. Errors name the file
  // and what is wrong ("...: not a GGUF file (bad magic)", "...: split 2 of 3; open the first split ...").
  static Result<GgufFile> open(const std::string& path);
  // Parses a buffer the caller keeps alive for the GgufFile's lifetime (e.g. the embedded model).
  static Result<GgufFile> from_memory(std::span<const uint8_t> bytes, std::string name);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::string& name() const { return name_; }
  // True when the bytes are this object's own read-only mapping of a file (open), false for a caller's buffer.
  bool is_file_mapping() const { return mapping_ != nullptr; }
  // The number of files the tensors come from (1 unless a split set was opened).
  size_t file_count() const { return 1 + split_mappings_.size(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* find(std::string_view key) const;

  // Typed getters: nullopt when the key is missing; an error when present with another type.
  // Integer getters accept any integer type whose value fits.
  Result<std::optional<std::string>> get_string(std::string_view key) const;
  Result<std::optional<uint32_t>> get_u32(std::string_view key) const;
  Result<std::optional<int64_t>> get_i64(std::string_view key) const;
  Result<std::optional<float>> get_f32(std::string_view key) const;
  Result<std::optional<bool>> get_bool(std::string_view key) const;
  Result<std::optional<std::vector<std::string>>> get_string_array(std::string_view key) const;
  Result<std::optional<std::vector<float>>> get_f32_array(std::string_view key) const;
  Result<std::optional<std::vector<int32_t>>> get_i32_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;

 private:
  GgufFile() = default;
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::string name);
  static Result<GgufFile> open_one(const std::string& path);
  // Adds the tensors of splits 2..count of the set whose first split this file is.
  Status add_splits(uint32_t count);

  std::unique_ptr<MappedFile> mapping_;  // null when parsed from a caller's buffer
  std::vector<std::unique_ptr<MappedFile>> split_mappings_;  // splits 2..count of a split set
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace pagoda::format
