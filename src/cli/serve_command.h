// `pagoda serve`: the OpenAI-compatible HTTP server.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_serve_command(CLI::App& app, int& exit_code);

}  // namespace pagoda::cli
