// Writes safetensors files.
#include "format/safetensors_writer.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "format/safetensors_reader.h"

namespace pagoda::format {

void SafetensorsWriter::add_tensor(const std::string& name, DType dtype, std::vector<int64_t> shape, TensorFill fill) {
  PAGODA_CHECK(dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16, "safetensors dtype");
  add_pending(name, std::string(safetensors_dtype_name(dtype)), dtype == DType::kF32 ? 4 : 2, std::move(shape),
              std::move(fill));
}

void SafetensorsWriter::add_byte_tensor(const std::string& name, std::vector<int64_t> shape, TensorFill fill) {
  add_pending(name, "U8", 1, std::move(shape), std::move(fill));
}

void SafetensorsWriter::add_pending(const std::string& name, std::string dtype, uint64_t element_bytes,
                                    std::vector<int64_t> shape, TensorFill fill) {
  for (const PendingTensor& t : tensors_) PAGODA_CHECK(t.name != name, "duplicate tensor {}", name);
  uint64_t n = 1;
  for (int64_t d : shape) {
    PAGODA_CHECK(d >= 0);
    n *= uint64_t(d);
  }
  tensors_.push_back({name, std::move(dtype), std::move(shape), n * element_bytes, std::move(fill)});
}

Status SafetensorsWriter::write(const std::string& path) const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.size_bytes}}};
    offset += t.size_bytes;
  }
  std::string text = header.dump();
  while ((text.size() + 8) % 8 != 0) text += ' ';
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return make_error(fmt::format("cannot write {}", path));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  std::vector<uint8_t> scratch;
  for (const PendingTensor& t : tensors_) {
    if (!ok) break;
    scratch.assign(size_t(t.size_bytes), 0);
    t.fill(scratch);
    ok = std::fwrite(scratch.data(), 1, scratch.size(), f) == scratch.size();
  }
  ok = (std::fclose(f) == 0) && ok;
  std::error_code ec;
  if (!ok) {
    std::filesystem::remove(tmp, ec);
    return make_error(fmt::format("cannot write {} (disk full?)", path));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return make_error(fmt::format("cannot rename {} to {}: {}", tmp, path, ec.message()));
  return Status();
}

}  // namespace pagoda::format
