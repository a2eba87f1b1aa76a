// The pagoda binary: one CLI11 app with a subcommand per file in this folder. Parsing only; every subcommand
// calls into the modules that do the work.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/bench_command.h"
#include "cli/common_options.h"
#include "cli/convert_command.h"
#include "cli/embed_command.h"
#include "cli/gen_model_command.h"
#include "cli/grammar_command.h"
#include "cli/hub_commands.h"
#include "cli/llama_server_flags.h"
#include "cli/perplexity_command.h"
#include "cli/quantize_command.h"
#include "cli/run_command.h"
#include "cli/serve_command.h"
#include "cli/tokenize_command.h"
#include "cli/tune_command.h"

int main(int argc, char** argv) {
  CLI::App app{"pagoda: LLM inference engine and server (Llama-family GGUF models)", "pagoda"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "pagoda " PAGODA_VERSION);
  int exit_code = 0;
  pagoda::cli::add_run_command(app, exit_code);
  pagoda::cli::add_convert_command(app, exit_code);
  pagoda::cli::add_tokenize_command(app, exit_code);
  pagoda::cli::add_gen_model_command(app, exit_code);
  pagoda::cli::add_quantize_command(app, exit_code);
  pagoda::cli::add_bench_command(app, exit_code);
  pagoda::cli::add_perplexity_command(app, exit_code);
  pagoda::cli::add_serve_command(app, exit_code);
  pagoda::cli::add_tune_command(app, exit_code);
  pagoda::cli::add_grammar_command(app, exit_code);
  pagoda::cli::add_embed_command(app, exit_code);
  pagoda::cli::add_hub_commands(app, exit_code);
  // llama.cpp's multi-letter short flags (-hf, -ctk, llama-server's -ngl, ...), which CLI11 cannot name.
  std::vector<std::string> args = pagoda::cli::spell_llama_cpp_flags(std::vector<std::string>(argv + 1, argv + argc));
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  try {
    app.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    // A last resort, not error handling: every expected failure is a Status reported by its subcommand. Whatever
    // escapes (a bug) still ends with a message and exit code 1 instead of std::terminate's abort.
    std::fprintf(stderr, "pagoda: internal error: %s\n", e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "pagoda: internal error: an unknown exception\n");
    return 1;
  }
  return exit_code;
}
