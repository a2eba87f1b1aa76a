// `pagoda grammar`: probe a constraint (random sentences, whether texts match) without a model (flags and
// printing only; src/grammar/grammar_probe.h answers).
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
void add_grammar_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
