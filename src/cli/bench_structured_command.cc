// `pagoda bench structured [--tokenizer tokenizer.json|MODEL.gguf] [--passes 3] [--json]`: the time of a token mask
// under JSON-schema, json_object, GBNF and regex grammars on a tokenizer's vocabulary (the bundled model's
// by default), cold and warm (structured_bench.h).
#include "cli/bench_structured_command.h"

#include <cstdio>
#include <memory>

#include "assets/bundled_model.h"
#include "bench/structured_bench.h"
#include "cli/common_options.h"
#include "format/gguf_reader.h"
#include "tokenizer/hf_tokenizer_loader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::cli {
namespace {

struct StructuredCliOptions {
  std::string tokenizer_path;
  int32_t num_warm_passes = 3;
  bool json = false;
};

Result<std::unique_ptr<Tokenizer>> load_bench_tokenizer(const std::string& path) {
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(const format::GgufFile file,
                            format::GgufFile::from_memory(bundled_model_gguf(), std::string(kBundledModelName)));
    return tokenizer_from_gguf(file);
  }
  if (path.ends_with(".json")) return tokenizer_from_hf_json(path);
  PAGODA_ASSIGN_OR_RETURN(const format::GgufFile file, format::GgufFile::open(path));
  return tokenizer_from_gguf(file);
}

int bench_structured(const StructuredCliOptions& o) {
  if (o.num_warm_passes < 1 || o.num_warm_passes > 1000) return report_error("--passes must be in [1, 1000]");
  Result<std::unique_ptr<Tokenizer>> tokenizer = load_bench_tokenizer(o.tokenizer_path);
  if (!tokenizer.ok()) return report_error(tokenizer.error());
  Result<bench::StructuredBenchReport> report =
      bench::run_structured_bench(**tokenizer, bench::default_structured_cases(), o.num_warm_passes);
  if (!report.ok()) return report_error(report.error());
  if (o.json) {
    std::printf("%s\n", bench::structured_report_json(*report).c_str());
  } else {
    std::printf("tokenizer: %s\n%s", o.tokenizer_path.empty() ? "the bundled model's" : o.tokenizer_path.c_str(),
                bench::structured_report_text(*report).c_str());
  }
  return 0;
}

}  // namespace

void add_bench_structured_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<StructuredCliOptions>();
  CLI::App* cmd =
      bench.add_subcommand("structured", "Structured outputs: token mask time per step (JSON schema, GBNF, regex)");
  cmd->add_option("--tokenizer", o->tokenizer_path, "a tokenizer.json or a GGUF (default: the bundled model's)");
  cmd->add_option("--passes", o->num_warm_passes, "warm passes over the documents after the cold one")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object instead of the table");
  cmd->callback([o, &exit_code] { exit_code = bench_structured(*o); });
}

}  // namespace pagoda::cli
