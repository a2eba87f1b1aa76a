// GGUF split naming and the split writer: what llama.cpp's gguf-split writes, so its readers and ours read our sets.
#include "format/gguf_split.h"

#include <fmt/format.h>

#include <cctype>

#include "format/gguf_names.h"
#include "format/gguf_writer.h"

namespace pagoda::format {

std::string gguf_split_path(std::string_view prefix, int index, int count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, index, count);
}

std::optional<GgufSplitName> parse_gguf_split_name(std::string_view path) {
  // "-00001-of-00003.gguf": 1 + 5 + 4 + 5 + 5 characters.
  constexpr std::string_view kSuffix = ".gguf";
  constexpr size_t kTail = 1 + 5 + 4 + 5 + kSuffix.size();
  if (path.size() <= kTail || !path.ends_with(kSuffix)) return std::nullopt;
  const std::string_view tail = path.substr(path.size() - kTail);
  if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
  auto number = [](std::string_view digits) -> std::optional<int> {
    int v = 0;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      v = v * 10 + (c - '0');
    }
    return v;
  };
  const std::optional<int> index = number(tail.substr(1, 5));
  const std::optional<int> count = number(tail.substr(10, 5));
  if (!index || !count || *index < 1 || *index > *count) return std::nullopt;
  return GgufSplitName{std::string(path.substr(0, path.size() - kTail)), *index, *count};
}

Result<std::vector<std::string>> write_gguf_splits(const GgufFile& source, const std::string& prefix, int count) {
  const std::vector<GgufTensorInfo>& tensors = source.tensors();
  if (count < 2 || count > 99999) return make_error(fmt::format("a split set has 2 to 99999 files, not {}", count));
  if (static_cast<size_t>(count) > tensors.size())
    return make_error(fmt::format("{} has {} tensors, fewer than the {} splits asked", source.name(), tensors.size(),
                                  count));
  uint64_t total_bytes = 0;
  for (const GgufTensorInfo& t : tensors) total_bytes += t.size_bytes;

  // Split k takes tensors until the bytes so far reach k/count of the total, keeping at least one tensor for each
  // split still to come.
  std::vector<GgufWriter> writers(count);
  size_t next = 0;
  uint64_t bytes_so_far = 0;
  for (int k = 0; k < count; ++k) {
    const uint64_t target = total_bytes / count * (k + 1);
    const size_t must_leave = static_cast<size_t>(count - k - 1);
    do {
      const GgufTensorInfo& t = tensors[next++];
      writers[k].add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
      bytes_so_far += t.size_bytes;
    } while (next < tensors.size() - must_leave && (k == count - 1 || bytes_so_far < target));
  }
  std::vector<std::string> paths;
  for (int k = 0; k < count; ++k) {
    GgufWriter& w = writers[k];
    w.set(gguf_key::kSplitNo, GgufValue::u16(static_cast<uint16_t>(k)));
    w.set(gguf_key::kSplitCount, GgufValue::u16(static_cast<uint16_t>(count)));
    w.set(gguf_key::kSplitTensorsCount, GgufValue::i32(static_cast<int32_t>(tensors.size())));
    for (const auto& [key, value] : source.metadata()) {
      if (key == gguf_key::kSplitNo || key == gguf_key::kSplitCount || key == gguf_key::kSplitTensorsCount) continue;
      if (k == 0 || key == gguf_key::kAlignment) w.set(key, value);
    }
    paths.push_back(gguf_split_path(prefix, k + 1, count));
    PAGODA_RETURN_IF_ERROR(w.write(paths.back()));
  }
  return paths;
}

}  // namespace pagoda::format
