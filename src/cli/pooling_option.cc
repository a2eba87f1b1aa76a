// --pooling and the GGUF's pooling_type.
#include "cli/pooling_option.h"

#include <fmt/format.h>

#include "format/gguf_names.h"

namespace pagoda::cli {

Result<PoolingChoice> choose_pooling(const std::optional<std::string>& flag, const LoadedModel& loaded) {
  PoolingChoice c{Pooling::kLast, "the default for decoder models"};
  if (flag) {
    std::optional<Pooling> p = parse_pooling(*flag);
    if (!p || *p == Pooling::kNone)
      return make_error("invalid option: --pooling must be last, mean or cls, got '" + *flag + "'");
    return PoolingChoice{*p, "--pooling"};
  }
  auto arch = loaded.file->get_string(format::gguf_key::kArchitecture);
  if (!arch.ok() || !*arch) return c;
  const std::string key = format::gguf_key::arch_key(**arch, format::gguf_key::kPoolingType);
  auto type = loaded.file->get_u32(key);
  if (!type.ok() || !*type) return c;
  std::optional<Pooling> from_file = pooling_from_gguf_type(**type);
  if (from_file && *from_file != Pooling::kNone) return PoolingChoice{*from_file, key};
  c.source = fmt::format("the default: {} = {} is not a pooling pagoda computes", key, **type);
  return c;
}

std::optional<TokenId> embedding_eos(const LoadedModel& loaded) {
  auto add_eos = loaded.file->get_bool(format::gguf_key::kAddEos);
  if (!add_eos.ok() || !*add_eos || !**add_eos || loaded.tokenizer->eos_id() < 0) return std::nullopt;
  return loaded.tokenizer->eos_id();
}

}  // namespace pagoda::cli
