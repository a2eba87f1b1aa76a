// `pagoda bench gemv`: registered under `pagoda bench` by add_bench_command.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_bench_gemv_command(CLI::App& bench, int& exit_code);

}  // namespace pagoda::cli
