// GgufFile: parsing and validation of GGUF v2/v3. Every length and count read from the file is checked against
// the bytes that remain before anything is allocated, so a corrupted file fails with one line naming the file
// and the field, never with a crash, a hang or a huge allocation.
#include "format/gguf_reader.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "format/gguf_names.h"
#include "format/gguf_split.h"

namespace pagoda::format {

static_assert(std::endian::native == std::endian::little, "the GGUF reader assumes a little-endian host");

namespace {

// Nobody nests arrays more than two deep; the bound keeps recursion (and stack use) finite on hostile input.
constexpr int kMaxArrayDepth = 16;
// Each GgufValue is ~100 bytes, so array elements are bounded in total too: one byte of file per element would
// otherwise let a 1 GiB file demand 100 GiB. Real vocabularies are a few hundred thousand entries per array.
constexpr uint64_t kMaxMetadataElements = uint64_t{1} << 24;
// Smallest encodings, used to bound counts by the remaining bytes before reserving.
constexpr uint64_t kMinMetadataEntryBytes = 8 + 4 + 1;       // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, n_dims, one dim, type, offset
constexpr std::string_view kSupportedTypes =
    "f32, f16, bf16, q8_0, q4_0, q4_1, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4, int8, "
    "awq_int4_g32|g64|g128; "
    "converted at load: q8_K; re-encoded losslessly for q2_K's, q6_K's, q7_K's and q8_0's kernels: tq1_0, "
    "tq2_0, iq3_xxs, iq3_s, iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, q5_0";

bool is_known_value_type(uint32_t type_id) { return type_id <= static_cast<uint32_t>(GgufValueType::kFloat64); }

// Smallest number of bytes one value of `type` occupies in the file.
uint64_t min_value_bytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
    case GgufValueType::kString: return 8;  // u64 length
    case GgufValueType::kArray: return 12;  // u32 element type + u64 count
  }
  return 1;
}

// Two hex digits, by hand: fmt 9's format-spec parser trips a false -Wstringop-overflow in GCC 12 at -O3.
std::string hex_byte(uint8_t byte) {
  constexpr char kDigits[] = "0123456789abcdef";
  return {kDigits[byte >> 4], kDigits[byte & 0xf]};
}

// Names from the file go into one-line error messages: escape control bytes and cut very long ones.
std::string quoted(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
      out += "\\x" + hex_byte(c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

// A cursor over the file bytes that turns every short read into an error naming the file and the field.
class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, const std::string& name) : bytes_(bytes), name_(name) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return bytes_.size() - offset_; }
  void set_context(std::string context) { context_ = std::move(context); }

  Status error(std::string_view message) const { return make_error(fmt::format("{}: {}", name_, message)); }
  Status context_error(std::string_view message) const {
    return make_error(fmt::format("{}: {}: {}", name_, context_, message));
  }

  Status need(uint64_t num_bytes, std::string_view what) const {
    if (num_bytes <= remaining()) return Status::ok_status();
    return make_error(fmt::format("{}: truncated file: {}: {} needs {} bytes at offset {}, but the file is {} bytes",
                                  name_, context_, what, num_bytes, offset_, bytes_.size()));
  }

  template <class T>
  Status read(T* out, std::string_view what) {
    PAGODA_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(out, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return Status::ok_status();
  }

  Status read_string(std::string* out, std::string_view what) {
    uint64_t length = 0;
    PAGODA_RETURN_IF_ERROR(read(&length, what));
    if (length > remaining()) {
      return make_error(fmt::format("{}: {}: {} of {} bytes at offset {} runs past the end of the file ({} bytes)",
                                    name_, context_, what, length, offset_, bytes_.size()));
    }
    out->assign(reinterpret_cast<const char*>(bytes_.data() + offset_), length);
    offset_ += length;
    return Status::ok_status();
  }

  Status read_value(GgufValueType type, int depth, GgufValue* out) {
    out->type = type;
    switch (type) {
      case GgufValueType::kUint8: return read_unsigned<uint8_t>(out);
      case GgufValueType::kUint16: return read_unsigned<uint16_t>(out);
      case GgufValueType::kUint32: return read_unsigned<uint32_t>(out);
      case GgufValueType::kUint64: return read_unsigned<uint64_t>(out);
      case GgufValueType::kInt8: return read_signed<int8_t>(out);
      case GgufValueType::kInt16: return read_signed<int16_t>(out);
      case GgufValueType::kInt32: return read_signed<int32_t>(out);
      case GgufValueType::kInt64: return read_signed<int64_t>(out);
      case GgufValueType::kFloat32: {
        float v = 0;
        PAGODA_RETURN_IF_ERROR(read(&v, "f32 value"));
        out->f64 = v;
        return Status::ok_status();
      }
      case GgufValueType::kFloat64: return read(&out->f64, "f64 value");
      case GgufValueType::kBool: {
        uint8_t v = 0;
        PAGODA_RETURN_IF_ERROR(read(&v, "bool value"));
        if (v > 1) return context_error(fmt::format("bool value {} at offset {} is not 0 or 1", v, offset_ - 1));
        out->u64 = v;
        return Status::ok_status();
      }
      case GgufValueType::kString: return read_string(&out->str, "string");
      case GgufValueType::kArray: return read_array(depth, out);
    }
    return context_error(fmt::format("unknown value type {}", static_cast<uint32_t>(type)));
  }

 private:
  template <class T>
  Status read_unsigned(GgufValue* out) {
    T v = 0;
    PAGODA_RETURN_IF_ERROR(read(&v, gguf_value_type_name(out->type)));
    out->u64 = v;
    return Status::ok_status();
  }
  template <class T>
  Status read_signed(GgufValue* out) {
    T v = 0;
    PAGODA_RETURN_IF_ERROR(read(&v, gguf_value_type_name(out->type)));
    out->i64 = v;
    return Status::ok_status();
  }

  Status read_array(int depth, GgufValue* out) {
    if (depth >= kMaxArrayDepth) {
      return context_error(fmt::format("arrays nested deeper than {} levels", kMaxArrayDepth));
    }
    uint32_t element_type_id = 0;
    PAGODA_RETURN_IF_ERROR(read(&element_type_id, "array element type"));
    if (!is_known_value_type(element_type_id)) {
      return context_error(fmt::format("array has unknown element type {}", element_type_id));
    }
    const auto element_type = static_cast<GgufValueType>(element_type_id);
    uint64_t count = 0;
    PAGODA_RETURN_IF_ERROR(read(&count, "array length"));
    if (count > remaining() / min_value_bytes(element_type)) {
      return context_error(fmt::format("array of {} {} elements at offset {} cannot fit in the {} bytes left", count,
                                       gguf_value_type_name(element_type), offset_, remaining()));
    }
    num_elements_ += count;
    if (num_elements_ > kMaxMetadataElements) {
      return context_error(
          fmt::format("metadata arrays hold more than {} elements in total; refusing to load", kMaxMetadataElements));
    }
    out->array_type = element_type;
    out->array.resize(count);
    for (GgufValue& element : out->array) {
      PAGODA_RETURN_IF_ERROR(read_value(element_type, depth + 1, &element));
    }
    return Status::ok_status();
  }

  std::span<const uint8_t> bytes_;
  const std::string& name_;
  uint64_t offset_ = 0;
  uint64_t num_elements_ = 0;  // array elements read so far, all arrays together
  std::string context_ = "header";
};

bool is_integer(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kUint16:
    case GgufValueType::kUint32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64: return true;
    default: return false;
  }
}

// Integer metadata as a wide signed value, for range checks against the getter's type.
std::optional<__int128> integer_of(const GgufValue& value) {
  switch (value.type) {
    case GgufValueType::kUint8:
    case GgufValueType::kUint16:
    case GgufValueType::kUint32:
    case GgufValueType::kUint64: return static_cast<__int128>(value.u64);
    case GgufValueType::kInt8:
    case GgufValueType::kInt16:
    case GgufValueType::kInt32:
    case GgufValueType::kInt64: return static_cast<__int128>(value.i64);
    default: return std::nullopt;
  }
}

std::string type_string(const GgufValue& value) {
  if (value.type != GgufValueType::kArray) return std::string(gguf_value_type_name(value.type));
  return fmt::format("array of {}", gguf_value_type_name(value.array_type));
}

std::string integer_string(__int128 v) {
  // fmt cannot print __int128 portably; every value here came from a u64 or an i64.
  if (v < 0) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", static_cast<uint64_t>(v));
}

}  // namespace

int64_t GgufTensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<GgufFile> GgufFile::open_one(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapping, MappedFile::open(path));
  PAGODA_ASSIGN_OR_RETURN(GgufFile file, parse(mapping->bytes(), path));
  file.mapping_ = std::move(mapping);
  return file;
}

Result<GgufFile> GgufFile::open(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(GgufFile file, open_one(path));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> count, file.get_u32(gguf_key::kSplitCount));
  if (!count || *count <= 1) return file;
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> no, file.get_u32(gguf_key::kSplitNo));
  if (no.value_or(0) != 0) {
    const std::optional<GgufSplitName> name = parse_gguf_split_name(path);
    return make_error(fmt::format("{}: split {} of {}; open the first split{}", path, *no + 1, *count,
                                  name ? " (" + gguf_split_path(name->prefix, 1, name->count) + ")" : ""));
  }
  PAGODA_RETURN_IF_ERROR(file.add_splits(*count));
  return file;
}

Status GgufFile::add_splits(uint32_t count) {
  const std::optional<GgufSplitName> name = parse_gguf_split_name(name_);
  if (!name || name->index != 1 || static_cast<uint32_t>(name->count) != count) {
    return make_error(fmt::format("{}: the first of {} splits, but not named PREFIX-00001-of-{:05d}.gguf, so the "
                                  "other splits cannot be found",
                                  name_, count, count));
  }
  for (uint32_t k = 1; k < count; ++k) {
    const std::string path = gguf_split_path(name->prefix, static_cast<int>(k + 1), static_cast<int>(count));
    PAGODA_ASSIGN_OR_RETURN(GgufFile part, open_one(path));
    PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> part_no, part.get_u32(gguf_key::kSplitNo));
    PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> part_count, part.get_u32(gguf_key::kSplitCount));
    if (part_no != k || part_count != count) {
      return make_error(fmt::format("{}: says split.no = {}, split.count = {}; expected split {} of {} ({})", path,
                                    part_no ? std::to_string(*part_no) : "none",
                                    part_count ? std::to_string(*part_count) : "none", k, count, name_));
    }
    for (GgufTensorInfo& info : part.tensors_) {
      if (tensor_index_.count(info.name) != 0) {
        return make_error(fmt::format("{}: tensor {} is also in another split of {}", path, quoted(info.name), name_));
      }
      tensor_index_.emplace(info.name, tensors_.size());
      tensors_.push_back(std::move(info));
    }
    split_mappings_.push_back(std::move(part.mapping_));
  }
  PAGODA_ASSIGN_OR_RETURN(std::optional<int64_t> expected, get_i64(gguf_key::kSplitTensorsCount));
  if (expected && *expected != static_cast<int64_t>(tensors_.size())) {
    return make_error(fmt::format("{}: split.tensors.count = {}, but its {} splits hold {} tensors", name_, *expected,
                                  count, tensors_.size()));
  }
  return Status();
}

Result<GgufFile> GgufFile::from_memory(std::span<const uint8_t> bytes, std::string name) {
  return parse(bytes, std::move(name));
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
  GgufFile file;
  file.name_ = std::move(name);
  GgufParser parser(bytes, file.name_);

  // Header: magic, version, counts. Magic and version get their own messages because they answer the
  // common question "is this even a file pagoda can read?".
  if (bytes.size() < 4) {
    return parser.error(fmt::format("too small to be a GGUF file ({} bytes)", bytes.size()));
  }
  if (std::memcmp(bytes.data(), "GGUF", 4) != 0) {
    return parser.error(fmt::format("not a GGUF file (bad magic: expected 47 47 55 46 \"GGUF\", found {} {} {} {})",
                                    hex_byte(bytes[0]), hex_byte(bytes[1]), hex_byte(bytes[2]), hex_byte(bytes[3])));
  }
  uint32_t magic = 0;
  PAGODA_RETURN_IF_ERROR(parser.read(&magic, "magic"));
  uint32_t version = 0;
  PAGODA_RETURN_IF_ERROR(parser.read(&version, "version"));
  if (version != 2 && version != 3) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped >= 1 && swapped <= 3) {
      return parser.error(
          fmt::format("big-endian GGUF file (version {} byte-swapped); pagoda reads little-endian GGUF only", swapped));
    }
    if (version == 1) {
      return parser.error(
          "GGUF version 1 is not supported (pagoda reads versions 2 and 3; re-convert the model with a current "
          "llama.cpp)");
    }
    return parser.error(fmt::format("unsupported GGUF version {} (pagoda reads versions 2 and 3)", version));
  }
  file.version_ = version;
  uint64_t num_tensors = 0;
  uint64_t num_metadata = 0;
  PAGODA_RETURN_IF_ERROR(parser.read(&num_tensors, "tensor count"));
  PAGODA_RETURN_IF_ERROR(parser.read(&num_metadata, "metadata count"));
  if (num_metadata > parser.remaining() / kMinMetadataEntryBytes) {
    return parser.error(fmt::format("metadata count {} cannot fit in a file of {} bytes (corrupted header)",
                                    num_metadata, bytes.size()));
  }
  if (num_tensors > parser.remaining() / kMinTensorInfoBytes) {
    return parser.error(
        fmt::format("tensor count {} cannot fit in a file of {} bytes (corrupted header)", num_tensors, bytes.size()));
  }

  // Metadata.
  file.metadata_.reserve(num_metadata);
  for (uint64_t i = 0; i < num_metadata; ++i) {
    parser.set_context(fmt::format("metadata entry {} of {}", i, num_metadata));
    std::string key;
    PAGODA_RETURN_IF_ERROR(parser.read_string(&key, "key"));
    parser.set_context(fmt::format("metadata key {}", quoted(key)));
    if (file.metadata_index_.count(key) != 0) {
      return parser.error(fmt::format("duplicate metadata key {}", quoted(key)));
    }
    uint32_t type_id = 0;
    PAGODA_RETURN_IF_ERROR(parser.read(&type_id, "value type"));
    if (!is_known_value_type(type_id)) {
      return parser.error(fmt::format("metadata key {} has unknown value type {}", quoted(key), type_id));
    }
    GgufValue value;
    PAGODA_RETURN_IF_ERROR(parser.read_value(static_cast<GgufValueType>(type_id), 0, &value));
    file.metadata_index_.emplace(key, file.metadata_.size());
    file.metadata_.emplace_back(std::move(key), std::move(value));
  }

  if (const GgufValue* alignment = file.find(gguf_key::kAlignment)) {
    if (alignment->type != GgufValueType::kUint32) {
      return parser.error(fmt::format("general.alignment has type {}, expected u32", type_string(*alignment)));
    }
    // The spec asks for a power of two that is a multiple of 8: tensor data is read in place as f32, f16 and
    // 8-byte-aligned blocks, and an alignment of 1, 2 or 4 would put those loads at misaligned addresses.
    if (alignment->u64 < 8 || !std::has_single_bit(alignment->u64)) {
      return parser.error(
          fmt::format("general.alignment is {}; it must be a power of two and a multiple of 8 (GGUF's default is {})",
                      alignment->u64, kGgufDefaultAlignment));
    }
    file.alignment_ = alignment->u64;
  } else {
    file.alignment_ = kGgufDefaultAlignment;
  }

  // Tensor infos. Types and shapes are validated as they are read; bounds need the data section's start,
  // which is only known after the last info.
  if (num_tensors > parser.remaining() / kMinTensorInfoBytes) {
    return parser.error(
        fmt::format("tensor count {} cannot fit in the {} bytes after the metadata", num_tensors, parser.remaining()));
  }
  file.tensors_.reserve(num_tensors);
  for (uint64_t i = 0; i < num_tensors; ++i) {
    parser.set_context(fmt::format("tensor info {} of {}", i, num_tensors));
    GgufTensorInfo info;
    PAGODA_RETURN_IF_ERROR(parser.read_string(&info.name, "name"));
    const std::string tensor = fmt::format("tensor {}", quoted(info.name));
    parser.set_context(tensor);
    if (file.tensor_index_.count(info.name) != 0) {
      return parser.error(fmt::format("duplicate tensor name {}", quoted(info.name)));
    }
    uint32_t num_dims = 0;
    PAGODA_RETURN_IF_ERROR(parser.read(&num_dims, "dimension count"));
    if (num_dims < 1 || num_dims > kGgufMaxDims) {
      return parser.error(fmt::format("{} has {} dimensions; GGUF allows 1 to {}", tensor, num_dims, kGgufMaxDims));
    }
    uint64_t num_elements = 1;
    for (uint32_t d = 0; d < num_dims; ++d) {
      uint64_t dim = 0;
      PAGODA_RETURN_IF_ERROR(parser.read(&dim, "dimension"));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return parser.error(
            fmt::format("{} has dimension {} = {}; each must be at least 1", tensor, d, static_cast<int64_t>(dim)));
      }
      if (__builtin_mul_overflow(num_elements, dim, &num_elements) ||
          num_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return parser.error(fmt::format("{} has too many elements (element count overflows 64 bits)", tensor));
      }
      info.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type_id = 0;
    PAGODA_RETURN_IF_ERROR(parser.read(&type_id, "type"));
    PAGODA_RETURN_IF_ERROR(parser.read(&info.offset, "data offset"));
    info.type = static_cast<GgmlType>(type_id);
    if (!ggml_type_is_known(info.type)) {
      return parser.error(fmt::format("{} has unknown ggml type id {}", tensor, type_id));
    }
    if (!ggml_type_is_supported(info.type)) {
      return parser.error(fmt::format("{} has type {}, which pagoda cannot load yet (supported: {})", tensor,
                                      ggml_type_name(info.type), kSupportedTypes));
    }
    const uint64_t row_elements = static_cast<uint64_t>(info.dims[0]);
    const uint64_t block_size = ggml_block_size(info.type);
    if (row_elements % block_size != 0) {
      return parser.error(fmt::format("{} has rows of {} elements, not a multiple of the {} block size {}", tensor,
                                      row_elements, ggml_type_name(info.type), block_size));
    }
    const uint64_t row_bytes = ggml_row_bytes(info.type, row_elements);
    if (row_bytes == 0 || __builtin_mul_overflow(row_bytes, num_elements / row_elements, &info.size_bytes)) {
      return parser.error(
          fmt::format("{} with shape {} has a byte size that overflows 64 bits", tensor, dims_string(info.dims)));
    }
    if (info.offset % file.alignment_ != 0) {
      return parser.error(fmt::format("{} has data offset {}, which is not a multiple of the alignment {}", tensor,
                                      info.offset, file.alignment_));
    }
    file.tensor_index_.emplace(info.name, file.tensors_.size());
    file.tensors_.push_back(std::move(info));
  }

  // Data section: starts at the first aligned offset after the infos. The file may end right after the infos
  // when there are no tensors, so the start is only checked through the tensors' bounds.
  const uint64_t infos_end = parser.offset();
  const uint64_t data_start = (infos_end + file.alignment_ - 1) / file.alignment_ * file.alignment_;
  for (GgufTensorInfo& info : file.tensors_) {
    uint64_t start = 0;
    uint64_t end = 0;
    if (__builtin_add_overflow(data_start, info.offset, &start) ||
        __builtin_add_overflow(start, info.size_bytes, &end) || end > bytes.size()) {
      return parser.error(fmt::format(
          "tensor {} (shape {}, {} bytes at data offset {}) ends past the end of the file ({} bytes, data section "
          "at {}); the file is truncated or corrupted",
          quoted(info.name), dims_string(info.dims), info.size_bytes, info.offset, bytes.size(), data_start));
    }
    info.data = bytes.data() + start;
  }
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status type_mismatch(const std::string& file_name, std::string_view key, const GgufValue& value,
                     std::string_view expected) {
  return make_error(fmt::format("{}: metadata key {} has type {}, expected {}", file_name, quoted(key),
                                type_string(value), expected));
}

template <class T>
Result<std::optional<T>> integer_getter(const std::string& file_name, std::string_view key, const GgufValue* value,
                                        std::string_view expected) {
  if (value == nullptr) return std::optional<T>();
  const std::optional<__int128> v = integer_of(*value);
  if (!v) return type_mismatch(file_name, key, *value, expected);
  if (*v < std::numeric_limits<T>::min() || *v > std::numeric_limits<T>::max()) {
    return make_error(fmt::format("{}: metadata key {} = {} does not fit in {}", file_name, quoted(key),
                                  integer_string(*v), expected));
  }
  return std::optional<T>(static_cast<T>(*v));
}

bool is_float(GgufValueType type) { return type == GgufValueType::kFloat32 || type == GgufValueType::kFloat64; }

// An f64 converts to float without undefined behaviour: NaN, infinities and finite values in float's range.
bool fits_f32(double v) { return !std::isfinite(v) || std::fabs(v) <= double(std::numeric_limits<float>::max()); }

}  // namespace

Result<std::optional<std::string>> GgufFile::get_string(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<std::string>();
  if (value->type != GgufValueType::kString) return type_mismatch(name_, key, *value, "string");
  return std::optional<std::string>(value->str);
}

Result<std::optional<uint32_t>> GgufFile::get_u32(std::string_view key) const {
  return integer_getter<uint32_t>(name_, key, find(key), "u32");
}

Result<std::optional<int64_t>> GgufFile::get_i64(std::string_view key) const {
  return integer_getter<int64_t>(name_, key, find(key), "i64");
}

Result<std::optional<float>> GgufFile::get_f32(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<float>();
  if (!is_float(value->type)) return type_mismatch(name_, key, *value, "f32");
  if (!fits_f32(value->f64))
    return make_error(fmt::format("{}: metadata key {} = {} does not fit in f32", name_, quoted(key), value->f64));
  return std::optional<float>(static_cast<float>(value->f64));
}

Result<std::optional<bool>> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<bool>();
  if (value->type != GgufValueType::kBool) return type_mismatch(name_, key, *value, "bool");
  return std::optional<bool>(value->u64 != 0);
}

Result<std::optional<std::vector<std::string>>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<std::vector<std::string>>();
  if (value->type != GgufValueType::kArray || value->array_type != GgufValueType::kString) {
    return type_mismatch(name_, key, *value, "array of string");
  }
  std::vector<std::string> out;
  out.reserve(value->array.size());
  for (const GgufValue& element : value->array) out.push_back(element.str);
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<std::optional<std::vector<float>>> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<std::vector<float>>();
  if (value->type != GgufValueType::kArray || !is_float(value->array_type)) {
    return type_mismatch(name_, key, *value, "array of f32");
  }
  std::vector<float> out;
  out.reserve(value->array.size());
  for (size_t i = 0; i < value->array.size(); ++i) {
    const double v = value->array[i].f64;
    if (!fits_f32(v)) {
      return make_error(
          fmt::format("{}: metadata key {} element {} = {} does not fit in f32", name_, quoted(key), i, v));
    }
    out.push_back(static_cast<float>(v));
  }
  return std::optional<std::vector<float>>(std::move(out));
}

Result<std::optional<std::vector<int32_t>>> GgufFile::get_i32_array(std::string_view key) const {
  const GgufValue* value = find(key);
  if (value == nullptr) return std::optional<std::vector<int32_t>>();
  if (value->type != GgufValueType::kArray || !is_integer(value->array_type)) {
    return type_mismatch(name_, key, *value, "array of i32");
  }
  std::vector<int32_t> out;
  out.reserve(value->array.size());
  for (size_t i = 0; i < value->array.size(); ++i) {
    const __int128 v = *integer_of(value->array[i]);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      return make_error(fmt::format("{}: metadata key {} element {} = {} does not fit in i32", name_, quoted(key), i,
                                    integer_string(v)));
    }
    out.push_back(static_cast<int32_t>(v));
  }
  return std::optional<std::vector<int32_t>>(std::move(out));
}

}  // namespace pagoda::format
