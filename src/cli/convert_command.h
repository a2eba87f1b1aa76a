// `pagoda convert`: other model formats -> GGUF. Flags only; conversion lives in format/.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_convert_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
