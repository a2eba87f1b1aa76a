// `pagoda run`: one prompt, streamed to the terminal. Flags only; generation lives in engine/Generator.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace pagoda::cli {
// Registers the subcommand; `exit_code` receives its result when it runs.
void add_run_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
