// `pagoda bench structured`: structured-output mask times (flags and printing only; src/bench measures).
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_bench_structured_command(CLI::App& bench, int& exit_code);
}  // namespace pagoda::cli
