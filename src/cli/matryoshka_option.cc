// --matryoshka-dimensions and the model's Matryoshka metadata.
#include "cli/matryoshka_option.h"

#include <fmt/format.h>

#include <algorithm>

#include "format/gguf_names.h"

namespace pagoda::cli {

Result<MatryoshkaChoice> choose_matryoshka(const std::optional<std::string>& flag, const LoadedModel& loaded) {
  const int64_t width = loaded.model->config().dim;
  if (flag) {
    PAGODA_ASSIGN_OR_RETURN(server::MatryoshkaDimensions m,
                            server::parse_matryoshka_dimensions(*flag, width, kMatryoshkaFlag));
    return MatryoshkaChoice{std::move(m), kMatryoshkaFlag};
  }
  using format::gguf_key::kIsMatryoshka;
  using format::gguf_key::kMatryoshkaDimensions;
  MatryoshkaChoice none{{}, "the model declares none"};
  auto sizes = loaded.file->get_i32_array(kMatryoshkaDimensions);
  if (!sizes.ok()) return MatryoshkaChoice{{}, fmt::format("{} ignored: {}", kMatryoshkaDimensions, sizes.error())};
  if (*sizes && !(*sizes)->empty()) {
    server::MatryoshkaDimensions m;
    for (int32_t size : **sizes) {
      if (size < 1 || size > width)
        return MatryoshkaChoice{{},
                                fmt::format("{} ignored: it lists {}, not a size of {}-dimension embeddings",
                                            kMatryoshkaDimensions, size, width)};
      m.allowed.push_back(size);
    }
    std::sort(m.allowed.begin(), m.allowed.end());
    m.allowed.erase(std::unique(m.allowed.begin(), m.allowed.end()), m.allowed.end());
    return MatryoshkaChoice{std::move(m), kMatryoshkaDimensions};
  }
  auto any = loaded.file->get_bool(kIsMatryoshka);
  if (!any.ok()) return MatryoshkaChoice{{}, fmt::format("{} ignored: {}", kIsMatryoshka, any.error())};
  if (*any && **any) return MatryoshkaChoice{{.any = true, .allowed = {}}, kIsMatryoshka};
  return none;
}

}  // namespace pagoda::cli
