// `pagoda tune`: registered by main.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_tune_command(CLI::App& app, int& exit_code);

}  // namespace pagoda::cli
