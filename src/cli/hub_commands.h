// `pagoda pull ORG/NAME[:QUANT] [--hf-file F]`, `pagoda ls`, `pagoda rm ORG/NAME`: the Hugging Face cache from the
// command line (hub/ does the work; this file parses the flags and prints).
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {

void add_hub_commands(CLI::App& app, int& exit_code);

}  // namespace pagoda::cli
