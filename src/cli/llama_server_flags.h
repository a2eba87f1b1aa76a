// llama_server_flags: llama-server's spellings of `pagoda serve`'s flags, so a llama-server command line runs
// unchanged: -c/--ctx-size, -t, -tb/--threads-batch, -np/--parallel, -b, -ub/--ubatch-size and --jinja act as
// pagoda's own flags (naming both an alias and its flag is an error); --mlock locks the process's memory;
// -ngl/--n-gpu-layers, -fa/--flash-attn and --no-mmap are accepted with one start-up line each saying what they do
// here. Owns the parsing of those spellings only; the flags' meaning stays with common_options and engine_options.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

#include <pagoda/status.h>

#include "cli/common_options.h"
#include "cli/engine_options.h"

namespace pagoda::cli {

struct LlamaServerFlags {
  std::optional<int32_t> threads_batch;  // -tb: llama.cpp's threads for prompts; pagoda has one thread count
  std::optional<int32_t> batch;          // -b: llama.cpp's logical batch (tokens a decode call takes)
  std::optional<int32_t> ubatch;         // -ub: llama.cpp's physical batch (tokens a step computes)
  std::optional<int32_t> n_gpu_layers;   // -ngl
  std::optional<std::string> flash_attn;  // -fa: on, off or auto
  bool jinja = false;
  bool mlock = false;
  bool no_mmap = false;
};

// llama.cpp's single-dash names of more than one letter, which CLI11 reads as bundled one-letter flags, spelled as
// their long names (also in their -name=VALUE forms): on every subcommand -hf, -hff, -ctk and -ctv; on `serve`
// (args[0]) also llama-server's -ngl, -fa, -np, -tb and -ub. `args` has no program name.
std::vector<std::string> spell_llama_cpp_flags(std::vector<std::string> args);

// Adds the aliases to `serve`, bound to pagoda's own options where the meaning is the same.
void add_llama_server_flags(CLI::App& cmd, CommonOptions& common, EngineCliOptions& engine, LlamaServerFlags& flags);

// Folds -tb, -b and -ub into pagoda's options and does --mlock; the start-up lines to print (one per flag that is
// accepted without its llama.cpp effect), or an error naming a contradiction (-t and -tb that differ, -fa with a
// bad value).
Result<std::vector<std::string>> apply_llama_server_flags(const LlamaServerFlags& flags, CommonOptions& common,
                                                           EngineCliOptions& engine);

}  // namespace pagoda::cli
