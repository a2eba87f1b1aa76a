// `pagoda embed`: embeddings of texts through the engine's pooling requests, one JSON line per text. Flags and
// printing only; the pooling is the engine's.
#pragma once

#include <CLI/CLI.hpp>

namespace pagoda::cli {
// Registers the subcommand; `exit_code` receives its result when it runs.
void add_embed_command(CLI::App& app, int& exit_code);
}  // namespace pagoda::cli
