// Matryoshka declarations, their check against a request, and truncation.
#include "server/matryoshka_dimensions.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace pagoda::server {

Result<MatryoshkaDimensions> parse_matryoshka_dimensions(std::string_view text, int64_t width, std::string_view flag) {
  MatryoshkaDimensions m;
  if (text == "any") {
    m.any = true;
    return m;
  }
  if (text == "none") return m;
  const std::string usage = fmt::format("invalid option: {} must be any, none or a list of sizes such as 64,128", flag);
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    int32_t size = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), size);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      return make_error(fmt::format("{}, got '{}'", usage, text));
    if (size < 1 || size > width)
      return make_error(fmt::format("invalid option: {}: {} is not a size of this model's {}-dimension embeddings",
                                    flag, size, width));
    m.allowed.push_back(size);
    start = comma + 1;
  }
  std::sort(m.allowed.begin(), m.allowed.end());
  m.allowed.erase(std::unique(m.allowed.begin(), m.allowed.end()), m.allowed.end());
  return m;
}

std::string describe_matryoshka_dimensions(const MatryoshkaDimensions& m, int64_t width) {
  if (m.any) return fmt::format("any size up to {}", width);
  if (m.allowed.empty()) return "none";
  std::string sizes;
  for (int32_t size : m.allowed) sizes += (sizes.empty() ? "" : ", ") + std::to_string(size);
  if (m.allowed.back() != width) sizes += fmt::format(" (and {})", width);
  return sizes;
}

std::optional<ApiError> check_embedding_dimensions(int64_t requested, int64_t width, const MatryoshkaDimensions& m) {
  if (requested == width) return std::nullopt;
  if (requested > width)
    return invalid_request(
        fmt::format("'dimensions' {} is more than this model's embeddings have ({})", requested, width), "dimensions");
  if (!m.truncatable())
    return invalid_request(fmt::format("'dimensions' {} is not supported: this model's embeddings have {} dimensions "
                                       "and it does not declare Matryoshka (truncatable) embeddings; shortening "
                                       "them would give poor results",
                                       requested, width),
                           "dimensions");
  if (!m.any && !std::binary_search(m.allowed.begin(), m.allowed.end(), int32_t(requested)))
    return invalid_request(fmt::format("'dimensions' {} is not supported: this model's Matryoshka sizes are {}",
                                       requested, describe_matryoshka_dimensions(m, width)),
                           "dimensions");
  return std::nullopt;
}

void truncate_embedding(std::vector<float>& v, int64_t dimensions) {
  if (dimensions >= 0 && size_t(dimensions) < v.size()) v.resize(size_t(dimensions));
}

}  // namespace pagoda::server
