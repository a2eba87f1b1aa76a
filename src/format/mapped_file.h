// MappedFile: a read-only memory mapping of a whole file. Owns the mapping; unmaps on destruction.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace pagoda::format {

class MappedFile {
 public:
  // Errors: "cannot open FILE: No such file or directory", "FILE is a directory", ...
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace pagoda::format
