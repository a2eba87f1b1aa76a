// `pagoda bench ...`: the benchmark subcommands. Flags only; measuring lives in src/bench.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_bench_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
