// `pagoda grammar (--json-schema FILE | --gbnf FILE | --regex TEXT | --json-object) [--samples 5] [--seed 1]`:
// compiles the constraint as a request's would be (an unsupported feature is an error naming it, exit 1) and
// prints random outputs it allows, one JSON string per line.
// `pagoda grammar --jsonl`: one JSON request per stdin line, one JSON answer per stdout line (grammar_probe.h);
// what the JSON Schema Test Suite e2e test drives.
#include "cli/grammar_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/common_options.h"
#include "grammar/grammar_probe.h"

namespace pagoda::cli {
namespace {

struct GrammarCliOptions {
  std::string json_schema_path, gbnf_path, regex;
  bool json_object = false;
  bool jsonl = false;
  int32_t num_samples = 5;
  uint64_t seed = 1;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int run_grammar(const GrammarCliOptions& o) {
  if (o.jsonl) {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line.empty()) continue;
      std::printf("%s\n", grammar::probe_grammar_json_line(line).c_str());
      std::fflush(stdout);
    }
    return 0;
  }
  const int num_kinds =
      int(!o.json_schema_path.empty()) + int(!o.gbnf_path.empty()) + int(!o.regex.empty()) + int(o.json_object);
  if (num_kinds != 1)
    return report_error("give exactly one of --json-schema, --gbnf, --regex, --json-object (or --jsonl)");
  if (o.num_samples < 0 || o.num_samples > 10000) return report_error("--samples must be in [0, 10000]");
  grammar::ProbeRequest req;
  req.num_samples = o.num_samples;
  req.seed = o.seed;
  if (!o.json_schema_path.empty() || !o.gbnf_path.empty()) {
    Result<std::string> text = read_text(o.json_schema_path.empty() ? o.gbnf_path : o.json_schema_path);
    if (!text.ok()) return report_error(text.error());
    req.spec.kind =
        o.json_schema_path.empty() ? grammar::GrammarSpec::Kind::kGbnf : grammar::GrammarSpec::Kind::kJsonSchema;
    req.spec.text = *text;
  } else if (!o.regex.empty()) {
    req.spec.kind = grammar::GrammarSpec::Kind::kRegex;
    req.spec.text = o.regex;
  } else {
    req.spec.kind = grammar::GrammarSpec::Kind::kJsonObject;
  }
  const grammar::ProbeAnswer answer = grammar::probe_grammar(req);
  if (!answer.status.ok()) return report_error(answer.status.message());
  for (const std::string& s : answer.samples) {
    std::printf("%s\n", nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  return 0;
}

}  // namespace

void add_grammar_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GrammarCliOptions>();
  CLI::App* cmd = app.add_subcommand("grammar", "Compile an output constraint and print random outputs it allows");
  cmd->add_option("--json-schema", o->json_schema_path, "a JSON Schema file");
  cmd->add_option("--gbnf", o->gbnf_path, "a GBNF grammar file (llama.cpp)");
  cmd->add_option("--regex", o->regex, "a regular expression the whole output matches");
  cmd->add_flag("--json-object", o->json_object, "any JSON object");
  cmd->add_option("--samples", o->num_samples, "random outputs to print")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the random outputs")->capture_default_str();
  cmd->add_flag("--jsonl", o->jsonl, "JSON requests on stdin, JSON answers on stdout, one per line");
  cmd->callback([o, &exit_code] { exit_code = run_grammar(*o); });
}

}  // namespace pagoda::cli
