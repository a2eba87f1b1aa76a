// llama_server_flags: llama-server's flag spellings folded into pagoda serve's options.
#include "cli/llama_server_flags.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace pagoda::cli {

std::vector<std::string> spell_llama_cpp_flags(std::vector<std::string> args) {
  using Spelling = std::pair<std::string_view, std::string_view>;
  static constexpr Spelling kEverywhere[] = {
      {"-hf", "--hf-repo"}, {"-hff", "--hf-file"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
      {"-ctkd", "--cache-type-k-draft"}, {"-ctvd", "--cache-type-v-draft"}};
  static constexpr Spelling kServe[] = {{"-ngl", "--n-gpu-layers"}, {"-fa", "--flash-attn"}, {"-np", "--parallel"},
                                        {"-tb", "--threads-batch"},  {"-ub", "--ubatch-size"}};
  const bool serve = !args.empty() && args[0] == "serve";
  auto spell = [](std::string& a, const Spelling& s) {
    const auto& [from, to] = s;
    if (a == from) {
      a = to;
    } else if (a.size() > from.size() && a.starts_with(from) && a[from.size()] == '=') {
      a = std::string(to) + a.substr(from.size());
    }
  };
  for (std::string& a : args) {
    for (const Spelling& s : kEverywhere) spell(a, s);
    if (serve)
      for (const Spelling& s : kServe) spell(a, s);
  }
  return args;
}

void add_llama_server_flags(CLI::App& cmd, CommonOptions& common, EngineCliOptions& engine, LlamaServerFlags& f) {
  // Same meaning: bound to pagoda's option, and exclusive with it.
  CLI::Option* ctx = cmd.add_option("-c,--ctx-size", common.max_seq_len, "llama-server's name of --max-seq-len");
  if (CLI::Option* own = cmd.get_option_no_throw("--max-seq-len")) ctx->excludes(own);
  CLI::Option* threads = cmd.add_option("-t", common.threads, "llama-server's name of --threads");
  if (CLI::Option* own = cmd.get_option_no_throw("--threads")) threads->excludes(own);
  CLI::Option* parallel = cmd.add_option("--parallel", engine.batch_size,
                                         "-np: llama-server's slots, pagoda's --batch-size (sequences per step)");
  if (CLI::Option* own = cmd.get_option_no_throw("--batch-size")) parallel->excludes(own);
  cmd.add_option("--threads-batch", f.threads_batch,
                 "-tb: threads for prompts; pagoda runs prompts and generation on the same --threads");
  CLI::Option* ub = cmd.add_option("--ubatch-size", f.ubatch, "-ub: tokens per step, pagoda's --max-batched-tokens");
  CLI::Option* b = cmd.add_option("-b", f.batch, "llama-server's logical batch: --max-batched-tokens unless -ub is given");
  if (CLI::Option* own = cmd.get_option_no_throw("--max-batched-tokens")) {
    ub->excludes(own);
    b->excludes(own);
  }
  cmd.add_option("--n-gpu-layers", f.n_gpu_layers, "-ngl: accepted; no effect (pagoda runs on the CPU)");
  CLI::Option* fa =
      cmd.add_option("--flash-attn", f.flash_attn, "-fa on|off|auto: --attention flash (on, auto) or naive (off)");
  if (CLI::Option* own = cmd.get_option_no_throw("--attention")) fa->excludes(own);
  cmd.add_flag("--jinja", f.jinja, "use the model's Jinja chat template (pagoda's default)");
  cmd.add_flag("--mlock", f.mlock, "lock the process's memory (the weights included) in RAM");
  cmd.add_flag("--no-mmap", f.no_mmap, "accepted; no effect (GGUF weights are read through a read-only mapping)");
}

Result<std::vector<std::string>> apply_llama_server_flags(const LlamaServerFlags& f, CommonOptions& common,
                                                           EngineCliOptions& engine) {
  std::vector<std::string> lines;
  if (f.threads_batch) {
    if (common.threads && *common.threads != *f.threads_batch)
      return make_error(fmt::format("invalid option: -tb {} differs from -t/--threads {}: pagoda runs prompts and "
                                    "generation on one thread count",
                                    *f.threads_batch, *common.threads));
    common.threads = f.threads_batch;
  }
  if (f.ubatch) {
    engine.max_batched_tokens = f.ubatch;
    if (f.batch)
      lines.push_back(fmt::format("-b {}: tokens per step are -ub's {} (pagoda's step is llama.cpp's physical batch)",
                                  *f.batch, *f.ubatch));
  } else if (f.batch) {
    engine.max_batched_tokens = f.batch;
  }
  if (f.n_gpu_layers)
    lines.push_back(fmt::format("-ngl {}: no effect, pagoda runs every layer on the CPU", *f.n_gpu_layers));
  if (f.flash_attn) {
    const std::string& v = *f.flash_attn;
    if (v == "off") {
      common.attention = "naive";
    } else if (v.empty() || v == "on" || v == "auto") {
      common.attention = "flash";
    } else {
      return make_error("invalid option: -fa/--flash-attn must be on, off or auto, got '" + v + "'");
    }
    lines.push_back(fmt::format("-fa {}: the CPU attention kernel is {} (--attention {})", v.empty() ? "on" : v,
                                common.attention == "flash" ? "flash (online softmax over KV blocks)" : "naive",
                                common.attention));
  }
  if (f.jinja) lines.push_back("--jinja: no effect, the model's own Jinja chat template is pagoda's default");
  if (f.no_mmap) lines.push_back("--no-mmap: no effect, GGUF weights are read through a read-only mapping");
  if (f.mlock) {
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0)
      lines.push_back(fmt::format("--mlock: could not lock memory ({}); raise the memlock limit (ulimit -l)",
                                  std::strerror(errno)));
  }
  return lines;
}

}  // namespace pagoda::cli
