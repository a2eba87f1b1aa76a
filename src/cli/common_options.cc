// Shared option wiring and config resolution for the subcommands.
#include "cli/common_options.h"

#include <cstdio>

namespace pagoda::cli {

void add_common_options(CLI::App& app, CommonOptions& o, bool with_model) {
  app.add_option("--config", o.config_path, "JSON configuration file (flags override it)");
  if (!with_model) return;
  app.add_option("-m,--model", o.model, "GGUF model file (default: the bundled stories260K)");
  app.add_option("--max-seq-len", o.max_seq_len, "positions per sequence (default: the model's context length)");
  app.add_option("--threads", o.threads, "worker threads (default: all cores)");
}

Result<PagodaConfig> resolve_config(const CommonOptions& o) {
  PagodaConfig config;
  if (!o.config_path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(config, load_config_file(o.config_path));
  }
  if (o.model) config.model = *o.model;
  if (o.max_seq_len) config.max_seq_len = *o.max_seq_len;
  if (o.threads) config.threads = *o.threads;
  Status valid = validate_config(config);
  if (!valid.ok()) return make_error("invalid option: " + valid.message());
  return config;
}

int report_error(const std::string& message) {
  std::fprintf(stderr, "pagoda: error: %s\n", message.c_str());
  return 1;
}

void report_inactive_settings(const PagodaConfig& config) {
  for (const std::string& line : inactive_settings(config)) std::fprintf(stderr, "pagoda: note: %s\n", line.c_str());
}

}  // namespace pagoda::cli
