// `pagoda bench serve ...`: the serving load generator's flags. Argument parsing and printing only; the
// client is bench/serve_client.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_bench_serve_command(CLI::App& bench, int& exit_code);
}  // namespace pagoda::cli
