// The shorter embedding sizes a command may return (`dimensions`): --matryoshka-dimensions when given, else the
// model file's declaration (pagoda.embedding.is_matryoshka / matryoshka_dimensions, from an HF folder's config.json
// fields that vLLM reads), else none. Argument handling only.
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>

#include "loader/loaded_model.h"
#include "server/matryoshka_dimensions.h"

namespace pagoda::cli {

inline constexpr const char* kMatryoshkaFlag = "--matryoshka-dimensions";
inline constexpr const char* kMatryoshkaFlagHelp =
    "the shorter embedding sizes the model was trained to give (Matryoshka), for a model whose metadata does not "
    "say: any, none, or a list such as 64,128,256 (default: the model's metadata, else none)";

struct MatryoshkaChoice {
  server::MatryoshkaDimensions dimensions;
  std::string source;  // for the start-up line: the flag, the metadata key, or why none
};

// Errors: a flag value that is not any, none or a list of sizes within the model's width. Metadata that does not
// fit the model is ignored, with the reason in `source` (a model file must not stop the server from starting).
Result<MatryoshkaChoice> choose_matryoshka(const std::optional<std::string>& flag, const LoadedModel& loaded);

}  // namespace pagoda::cli
