// `pagoda tokenize`: prints the token ids of a text. Flags only.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_tokenize_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
