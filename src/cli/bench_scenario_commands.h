// `pagoda bench batched|prefix|interference`: the engine-scenario benchmarks (flags and printing only; the
// measuring lives in src/bench).
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_bench_scenario_commands(CLI::App& bench, int& exit_code);
}  // namespace pagoda::cli
