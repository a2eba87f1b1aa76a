// Parses safetensors headers (8-byte little-endian length, then JSON) and model folder indexes.
#include "format/safetensors_reader.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/json_text.h"

namespace pagoda::format {
namespace {

using nlohmann::json;

// A header larger than this is not a real checkpoint (real ones are a few hundred KB) but garbage.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

int64_t SafetensorsTensor::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<DType> safetensors_dtype(const std::string& name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    default: return "?";
  }
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(auto mapping, MappedFile::open(path));
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->mapping_ = std::move(mapping);
  PAGODA_RETURN_IF_ERROR(f->parse(f->mapping_->bytes()));
  return f;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::from_memory(std::span<const uint8_t> bytes,
                                                                      std::string name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = std::move(name);
  PAGODA_RETURN_IF_ERROR(f->parse(bytes));
  return f;
}

Status SafetensorsFile::parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < 8)
    return make_error(
        fmt::format("{}: truncated safetensors file ({} bytes, the header length alone is 8)", path_, bytes.size()));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[size_t(i)];
  if (header_len > bytes.size() - 8 || header_len > kMaxHeaderBytes)
    return make_error(fmt::format("{}: bad safetensors header length {} (the file has {} bytes after it)", path_,
                                  header_len, bytes.size() - 8));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  Result<json> parsed = parse_untrusted_json(text);
  if (!parsed.ok()) return make_error(fmt::format("{}: the safetensors header: {}", path_, parsed.error()));
  const json& header = *parsed;
  if (!header.is_object()) return make_error(fmt::format("{}: the safetensors header is not a JSON object", path_));
  const uint8_t* data = bytes.data() + 8 + header_len;
  const uint64_t data_size = bytes.size() - 8 - header_len;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) {
      return make_error(fmt::format("{}: tensor '{}': {}", path_, name, what));
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() || !entry.contains("shape") ||
        !entry["shape"].is_array() || !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      return bad("needs \"dtype\" (string), \"shape\" (array) and \"data_offsets\" ([begin, end])");
    SafetensorsTensor t;
    t.name = name;
    const std::string dtype = entry["dtype"].get<std::string>();
    std::optional<DType> dt = safetensors_dtype(dtype);
    t.bytes = dtype == "U8";
    if (!dt && !t.bytes) return bad(fmt::format("dtype {} is not supported (F32, F16, BF16, U8)", dtype));
    t.dtype = dt.value_or(DType::kF32);
    uint64_t num_elements = 1;
    for (const json& d : entry["shape"]) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > (uint64_t(1) << 40))
        return bad("shape entries must be non-negative integers");
      t.shape.push_back(int64_t(d.get<uint64_t>()));
      // Checked before it can wrap: [2^32, 2^32] must not pass as a tensor of 0 elements.
      if (__builtin_mul_overflow(num_elements, d.get<uint64_t>(), &num_elements) || num_elements > (uint64_t(1) << 40))
        return bad("shape is too large");
    }
    const json& off = entry["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      return bad("data_offsets must be non-negative integers");
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    const uint64_t expected = num_elements * (t.bytes ? 1 : t.dtype == DType::kF32 ? 4 : 2);
    if (begin > end || end - begin != expected)
      return bad(fmt::format("data_offsets [{}, {}] hold {} bytes but dtype {} x shape {} is {} bytes", begin, end,
                             end >= begin ? end - begin : 0, dtype, shape_string(t.shape), expected));
    if (end > data_size)
      return bad(fmt::format("data_offsets [{}, {}] run past the end of the data ({} bytes; truncated file?)", begin,
                             end, data_size));
    t.data = data + begin;
    t.size_bytes = expected;
    t.file = &path_;
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  return Status();
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint c;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    std::ifstream in(index_path);
    std::stringstream text;
    text << in.rdbuf();
    Result<json> parsed = parse_untrusted_json(text.str());
    if (!parsed.ok()) return make_error(fmt::format("{}: {}", index_path.string(), parsed.error()));
    const json& index = *parsed;
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      return make_error(
          fmt::format("{}: not a safetensors index (needs an object \"weight_map\")", index_path.string()));
    std::map<std::string, SafetensorsFile*> shards;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string())
        return make_error(fmt::format("{}: weight_map[\"{}\"] must be a file name", index_path.string(), tensor));
      const std::string shard_name = shard.get<std::string>();
      if (shard_name.find('/') != std::string::npos)
        return make_error(fmt::format("{}: weight_map[\"{}\"] = \"{}\" must be a file in the folder",
                                      index_path.string(), tensor, shard_name));
      auto it = shards.find(shard_name);
      if (it == shards.end()) {
        const std::string path = (fs::path(dir) / shard_name).string();
        if (!fs::exists(path, ec))
          return make_error(
              fmt::format("{}: shard {} (holding tensor {}) is missing", index_path.string(), path, tensor));
        PAGODA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(path));
        it = shards.emplace(shard_name, file.get()).first;
        c.files_.push_back(std::move(file));
      }
      const SafetensorsTensor* t = it->second->find(tensor);
      if (t == nullptr)
        return make_error(fmt::format("{}: tensor {} is not in {}, where {} says it is", it->second->path(), tensor,
                                      shard_name, index_path.string()));
      c.by_name_[tensor] = t;
    }
    return c;
  }
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(single, ec))
    return make_error(fmt::format("{}: no model.safetensors or model.safetensors.index.json", dir));
  PAGODA_ASSIGN_OR_RETURN(auto file, SafetensorsFile::open(single));
  for (const SafetensorsTensor& t : file->tensors()) c.by_name_[t.name] = &t;
  c.files_.push_back(std::move(file));
  return c;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::string SafetensorsCheckpoint::describe() const {
  std::string s;
  for (const auto& f : files_) s += (s.empty() ? "" : ", ") + f->path();
  return s;
}

}  // namespace pagoda::format
