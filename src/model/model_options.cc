// Names of the model options, as flags and the config spell them.
#include "model/model_options.h"

namespace pagoda {

std::string_view attention_kind_name(AttentionKind kind) {
  switch (kind) {
    case AttentionKind::kFlash: return "flash";
    case AttentionKind::kNaive: return "naive";
  }
  return "?";
}

std::optional<AttentionKind> parse_attention_kind(std::string_view name) {
  if (name == "flash") return AttentionKind::kFlash;
  if (name == "naive") return AttentionKind::kNaive;
  return std::nullopt;
}

}  // namespace pagoda
