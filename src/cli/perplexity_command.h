// `pagoda perplexity`: perplexity of a model over a text file, and with --kl-base its KL divergence and top-1
// agreement against a base model. Flags and printing only; the evaluation lives in src/eval.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
// Registers the subcommand; `exit_code` receives its result when it runs.
void add_perplexity_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
