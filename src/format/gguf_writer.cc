// GgufWriter: serializes metadata and tensors in llama.cpp's standard layout: header, metadata, tensor infos,
// padding to the alignment, then each tensor's bytes padded to the alignment. Offsets run in insertion order,
// each the previous one plus its padded size, which is what llama.cpp's loader expects.
#include "format/gguf_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <span>

#include "core/check.h"
#include "format/gguf_names.h"

namespace pagoda::format {

static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a little-endian host");

namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr size_t kMaxTensorNameBytes = 63;  // llama.cpp rejects names of GGML_MAX_NAME (64) bytes or more

uint64_t align_up(uint64_t offset, uint64_t alignment) { return (offset + alignment - 1) / alignment * alignment; }

template <class T>
void append(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void append_string(std::vector<uint8_t>& out, const std::string& s) {
  append<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// Values are validated when set, so encoding cannot fail.
void append_value(std::vector<uint8_t>& out, const GgufValue& value) {
  switch (value.type) {
    case GgufValueType::kUint8: append<uint8_t>(out, static_cast<uint8_t>(value.u64)); return;
    case GgufValueType::kInt8: append<int8_t>(out, static_cast<int8_t>(value.i64)); return;
    case GgufValueType::kUint16: append<uint16_t>(out, static_cast<uint16_t>(value.u64)); return;
    case GgufValueType::kInt16: append<int16_t>(out, static_cast<int16_t>(value.i64)); return;
    case GgufValueType::kUint32: append<uint32_t>(out, static_cast<uint32_t>(value.u64)); return;
    case GgufValueType::kInt32: append<int32_t>(out, static_cast<int32_t>(value.i64)); return;
    case GgufValueType::kFloat32: append<float>(out, static_cast<float>(value.f64)); return;
    case GgufValueType::kBool: append<uint8_t>(out, value.u64 != 0 ? 1 : 0); return;
    case GgufValueType::kString: append_string(out, value.str); return;
    case GgufValueType::kArray:
      append<uint32_t>(out, static_cast<uint32_t>(value.array_type));
      append<uint64_t>(out, value.array.size());
      for (const GgufValue& element : value.array) append_value(out, element);
      return;
    case GgufValueType::kUint64: append<uint64_t>(out, value.u64); return;
    case GgufValueType::kInt64: append<int64_t>(out, value.i64); return;
    case GgufValueType::kFloat64: append<double>(out, value.f64); return;
  }
  PAGODA_CHECK(false, "unknown GGUF value type {}", static_cast<uint32_t>(value.type));
}

// A value the writer would silently truncate is a caller bug, caught here rather than in a reader later.
void check_value(const std::string& key, const GgufValue& value) {
  auto check_unsigned = [&](uint64_t max) {
    PAGODA_CHECK(value.u64 <= max, "metadata '{}': {} value {} out of range", key, gguf_value_type_name(value.type),
                 value.u64);
  };
  auto check_signed = [&](int64_t min, int64_t max) {
    PAGODA_CHECK(value.i64 >= min && value.i64 <= max, "metadata '{}': {} value {} out of range", key,
                 gguf_value_type_name(value.type), value.i64);
  };
  switch (value.type) {
    case GgufValueType::kUint8: check_unsigned(std::numeric_limits<uint8_t>::max()); return;
    case GgufValueType::kUint16: check_unsigned(std::numeric_limits<uint16_t>::max()); return;
    case GgufValueType::kUint32: check_unsigned(std::numeric_limits<uint32_t>::max()); return;
    case GgufValueType::kBool: check_unsigned(1); return;
    case GgufValueType::kInt8:
      check_signed(std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max());
      return;
    case GgufValueType::kInt16:
      check_signed(std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max());
      return;
    case GgufValueType::kInt32:
      check_signed(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      return;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat32:
    case GgufValueType::kFloat64:
    case GgufValueType::kString: return;
    case GgufValueType::kArray:
      PAGODA_CHECK(static_cast<uint32_t>(value.array_type) <= static_cast<uint32_t>(GgufValueType::kFloat64),
                   "metadata '{}': unknown array element type {}", key, static_cast<uint32_t>(value.array_type));
      for (const GgufValue& element : value.array) {
        PAGODA_CHECK(element.type == value.array_type, "metadata '{}': array of {} holds a {} element", key,
                     gguf_value_type_name(value.array_type), gguf_value_type_name(element.type));
        check_value(key, element);
      }
      return;
  }
  PAGODA_CHECK(false, "metadata '{}': unknown GGUF value type {}", key, static_cast<uint32_t>(value.type));
}

// Bytes a tensor of this type and shape occupies, for any type ggml knows (quantized ones included, so tests
// can write files the reader must refuse).
uint64_t tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& dims) {
  const uint64_t block_size = ggml_block_size(type);
  PAGODA_CHECK(block_size != 0, "tensor '{}': unknown ggml type {}", name, static_cast<uint32_t>(type));
  PAGODA_CHECK(dims[0] % static_cast<int64_t>(block_size) == 0,
               "tensor '{}': row of {} elements is not a multiple of the {} block size {}", name, dims[0],
               ggml_type_name(type), block_size);
  uint64_t bytes = static_cast<uint64_t>(dims[0]) / block_size * ggml_type_size(type) + ggml_row_header_bytes(type);
  for (size_t d = 1; d < dims.size(); ++d) {
    PAGODA_CHECK(!__builtin_mul_overflow(bytes, static_cast<uint64_t>(dims[d]), &bytes), "tensor '{}' is too big",
                 name);
  }
  return bytes;
}

Status errno_error(std::string_view what, const std::string& path) {
  return make_error(fmt::format("cannot {} {}: {}", what, path, std::strerror(errno)));
}

Status write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, p, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno_error("write", path);
    }
    p += written;
    size -= static_cast<size_t>(written);
  }
  return Status::ok_status();
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  check_value(key, value);
  if (key == gguf_key::kAlignment) {
    PAGODA_CHECK(value.type == GgufValueType::kUint32, "general.alignment must be a u32, not {}",
                 gguf_value_type_name(value.type));
    PAGODA_CHECK(value.u64 >= 8 && std::has_single_bit(value.u64),
                 "general.alignment must be a power of two and a multiple of 8 (what readers accept), not {}",
                 value.u64);
  }
  for (auto& [existing_key, existing_value] : metadata_) {
    if (existing_key == key) {
      existing_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::check_new_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& dims,
                                  uint64_t size_bytes) const {
  PAGODA_CHECK(name.size() <= kMaxTensorNameBytes, "tensor name '{}' is {} bytes; GGUF readers allow at most {}", name,
               name.size(), kMaxTensorNameBytes);
  PAGODA_CHECK(!dims.empty() && dims.size() <= kGgufMaxDims, "tensor '{}' has {} dims; GGUF allows 1 to {}", name,
               dims.size(), kGgufMaxDims);
  for (int64_t d : dims) PAGODA_CHECK(d > 0, "tensor '{}' has a dimension of {}", name, d);
  for (const PendingTensor& t : tensors_) PAGODA_CHECK(t.name != name, "tensor '{}' added twice", name);
  const uint64_t expected_bytes = tensor_bytes(name, type, dims);
  PAGODA_CHECK(size_bytes == expected_bytes, "tensor '{}': {} bytes given, its type and shape need {}", name,
               size_bytes, expected_bytes);
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<int64_t> dims, const void* data,
                            uint64_t size_bytes) {
  check_new_tensor(name, type, dims, size_bytes);
  PAGODA_CHECK(data != nullptr, "tensor '{}' has no data", name);
  tensors_.push_back(PendingTensor{name, type, std::move(dims), data, size_bytes, nullptr});
}

void GgufWriter::add_tensor_generated(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                                      uint64_t size_bytes, TensorFill fill) {
  check_new_tensor(name, type, dims, size_bytes);
  PAGODA_CHECK(fill != nullptr, "tensor '{}' has no generator", name);
  tensors_.push_back(PendingTensor{name, type, std::move(dims), nullptr, size_bytes, std::move(fill)});
}

const uint8_t* GgufWriter::tensor_data(const PendingTensor& t, std::vector<uint8_t>& scratch) {
  if (t.data != nullptr) return static_cast<const uint8_t*>(t.data);
  scratch.assign(t.size_bytes, 0);
  t.fill(std::span<uint8_t>(scratch));
  return scratch.data();
}

uint64_t GgufWriter::alignment() const {
  for (const auto& [key, value] : metadata_) {
    if (key == gguf_key::kAlignment) return value.u64;
  }
  return kGgufDefaultAlignment;
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  const uint64_t align = alignment();
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), "GGUF", 4);
  append<uint32_t>(out, kGgufVersion);
  append<uint64_t>(out, tensors_.size());
  append<uint64_t>(out, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    append_string(out, key);
    append<uint32_t>(out, static_cast<uint32_t>(value.type));
    append_value(out, value);
  }
  uint64_t data_offset = 0;
  for (const PendingTensor& t : tensors_) {
    append_string(out, t.name);
    append<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) append<uint64_t>(out, static_cast<uint64_t>(d));
    append<uint32_t>(out, static_cast<uint32_t>(t.type));
    append<uint64_t>(out, data_offset);
    data_offset += align_up(t.size_bytes, align);
  }
  out.resize(align_up(out.size(), align), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  const uint64_t align = alignment();
  std::vector<uint8_t> out = header_bytes();
  std::vector<uint8_t> scratch;
  for (const PendingTensor& t : tensors_) {
    const uint8_t* p = tensor_data(t, scratch);
    out.insert(out.end(), p, p + t.size_bytes);
    out.resize(align_up(out.size(), align), 0);
  }
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const uint64_t align = alignment();
  // The pid keeps two processes converting into the same directory from sharing a temporary file.
  const std::string temp_path = fmt::format("{}.tmp.{}", path, ::getpid());
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error("create", temp_path);

  auto fail = [&](Status status) {
    ::close(fd);
    ::unlink(temp_path.c_str());
    return status;
  };
  const std::vector<uint8_t> header = header_bytes();
  Status status = write_all(fd, header.data(), header.size(), temp_path);
  if (!status.ok()) return fail(std::move(status));
  const std::vector<uint8_t> padding(align, 0);
  std::vector<uint8_t> scratch;
  for (const PendingTensor& t : tensors_) {
    status = write_all(fd, tensor_data(t, scratch), t.size_bytes, temp_path);
    if (!status.ok()) return fail(std::move(status));
    const uint64_t num_padding = align_up(t.size_bytes, align) - t.size_bytes;
    status = write_all(fd, padding.data(), num_padding, temp_path);
    if (!status.ok()) return fail(std::move(status));
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  if (::fsync(fd) != 0) return fail(errno_error("sync", temp_path));
  if (::close(fd) != 0) {
    Status close_status = errno_error("close", temp_path);
    ::unlink(temp_path.c_str());
    return close_status;
  }
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    Status rename_status = make_error(fmt::format("cannot rename {} to {}: {}", temp_path, path, std::strerror(errno)));
    ::unlink(temp_path.c_str());
    return rename_status;
  }
  return Status::ok_status();
}

}  // namespace pagoda::format
