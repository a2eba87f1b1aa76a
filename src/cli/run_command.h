// `pagoda run`: one prompt, streamed to the terminal. Flags only; generation is one request through the Engine.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace pagoda::cli {
// Registers the subcommand; `exit_code` receives its result when it runs.
void add_run_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
