// The bundled model: stories260K (MIT, Copyright (c) 2023 Andrej Karpathy) as GGUF bytes linked into the
// binary, so every subcommand has a model on a machine with no download. See assets/models/stories260K.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace pagoda {

std::span<const uint8_t> bundled_model_gguf();
constexpr std::string_view kBundledModelName = "stories260K";

}  // namespace pagoda
