// `pagoda quantize`: a GGUF's weight matrices to Q8_0 or Q4_0. Flags only; the work is format/quantize_gguf.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_quantize_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
