// The imatrix GGUF -> mean squared activations: sum / count per expert row (a row that saw no token gets 1, as
// llama-quantize gives it), counts rounded to integers first as llama.cpp's loader does.
#include "format/imatrix_reader.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "format/gguf_reader.h"
#include "format/gguf_types.h"

namespace pagoda::format {
namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";

std::vector<float> imatrix_values(const GgufTensorInfo& t) {
  std::vector<float> out(size_t(t.num_elements()));
  std::memcpy(out.data(), t.data, out.size() * sizeof(float));
  return out;
}

}  // namespace

Result<ImportanceMatrix> read_importance_matrix(const std::string& path) {
  Result<GgufFile> opened = GgufFile::open(path);
  if (!opened.ok())
    return make_error(fmt::format("{} (an imatrix must be the GGUF that llama-imatrix writes; the legacy .dat "
                                  "format is not read)",
                                  opened.error()));
  const GgufFile& file = *opened;
  ImportanceMatrix m;
  PAGODA_ASSIGN_OR_RETURN(std::optional<std::vector<std::string>> datasets, file.get_string_array("imatrix.datasets"));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> chunk_count, file.get_u32("imatrix.chunk_count"));
  PAGODA_ASSIGN_OR_RETURN(std::optional<uint32_t> chunk_size, file.get_u32("imatrix.chunk_size"));
  if (!datasets || !chunk_count || !chunk_size)
    return make_error(fmt::format("{}: missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, "
                                  "imatrix.chunk_size); not an imatrix file",
                                  path));
  m.datasets = std::move(*datasets);
  m.chunk_count = *chunk_count;
  std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> sums_counts;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.name.ends_with(kSumsSuffix))
      sums_counts[t.name.substr(0, t.name.size() - kSumsSuffix.size())].first = &t;
    else if (t.name.ends_with(kCountsSuffix))
      sums_counts[t.name.substr(0, t.name.size() - kCountsSuffix.size())].second = &t;
  }
  if (sums_counts.empty()) return make_error(fmt::format("{}: no importance data in the file", path));
  for (const auto& [name, sc] : sums_counts) {
    const auto [sums_t, counts_t] = sc;
    if (sums_t == nullptr || counts_t == nullptr)
      return make_error(fmt::format("{}: '{}' has {} without {}", path, name,
                                    sums_t == nullptr ? kCountsSuffix : kSumsSuffix,
                                    sums_t == nullptr ? kSumsSuffix : kCountsSuffix));
    if (sums_t->type != GgmlType::kF32 || counts_t->type != GgmlType::kF32)
      return make_error(fmt::format("{}: the sums and counts of '{}' must be f32", path, name));
    const std::vector<float> sums = imatrix_values(*sums_t);
    const std::vector<float> counts_f = imatrix_values(*counts_t);
    if (counts_f.empty() || sums.size() % counts_f.size() != 0)
      return make_error(fmt::format("{}: '{}' has {} sums for {} counts", path, name, sums.size(), counts_f.size()));
    const size_t row_len = sums.size() / counts_f.size();
    std::vector<float> values(sums.size());
    for (size_t j = 0; j < counts_f.size(); ++j) {
      const float count = float(std::lround(counts_f[j]));
      for (size_t i = 0; i < row_len; ++i) values[j * row_len + i] = count > 0.0f ? sums[j * row_len + i] / count : 1;
    }
    for (float v : values)
      if (!std::isfinite(v)) return make_error(fmt::format("{}: '{}' holds a non-finite value", path, name));
    m.weights.emplace(name, std::move(values));
  }
  return m;
}

}  // namespace pagoda::format
