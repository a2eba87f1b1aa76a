// `pagoda gen-model`: random-weight models of real shapes for benchmarks. Flags only.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_gen_model_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
