// `pagoda grammar` and `pagoda bench structured` end to end: random outputs under a JSON schema parse and obey it,
// an unsupported schema is an error naming the keyword (exit 1), the --jsonl protocol; the official JSON Schema
// Test Suite (draft-04 cases, json_schema_suite/run_suite.mjs): every output generated under a schema the compiler
// accepts validates with ajv, and no instance the suite marks invalid is accepted; the structured-output benchmark
// runs on the bundled vocabulary, and on MaskBench's format (tests/data/maskbench: counts per outcome, no invalid
// instance accepted).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

std::vector<std::string> output_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(CliGrammar, SamplesObeyTheSchema) {
  TempDir dir;
  write_file(
      dir.path() + "/schema.json",
      R"({"type":"object","properties":{"id":{"type":"integer","minimum":1,"maximum":99},"tag":{"enum":["a","b"]}},"required":["id","tag"],"additionalProperties":false})");
  const ProcessResult r =
      run_pagoda({"grammar", "--json-schema", dir.path() + "/schema.json", "--samples", "5", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = output_lines(r.out);
  ASSERT_EQ(lines.size(), 5u);
  for (const std::string& line : lines) {
    const nlohmann::json value = nlohmann::json::parse(nlohmann::json::parse(line).get<std::string>());
    EXPECT_GE(value["id"].get<int>(), 1);
    EXPECT_LE(value["id"].get<int>(), 99);
    EXPECT_TRUE(value["tag"] == "a" || value["tag"] == "b");
    EXPECT_EQ(value.size(), 2u);
  }
}

TEST(CliGrammar, UnsupportedSchemaIsAnErrorNamingIt) {
  TempDir dir;
  write_file(dir.path() + "/schema.json",
             R"({"type":"object","properties":{"x":{"type":"array","items":{"type":"string"},"uniqueItems":true}}})");
  const ProcessResult r = run_pagoda({"grammar", "--json-schema", dir.path() + "/schema.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("schema at #/properties/x: 'uniqueItems' is supported only for"), std::string::npos) << r.err;
  const ProcessResult both = run_pagoda({"grammar", "--regex", "a", "--json-object"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("exactly one of"), std::string::npos) << both.err;
}

TEST(CliGrammar, JsonLinesProtocol) {
  TempDir dir;
  write_file(dir.path() + "/requests.jsonl", R"({"kind":"regex","text":"[0-9]{2}","samples":2,"texts":["12","1x"]})"
                                             "\n"
                                             R"({"kind":"gbnf","text":"root ::= \"a\" (","samples":1})"
                                             "\n");
  const std::string out =
      run_command(std::string(PAGODA_TEST_BINARY) + " grammar --jsonl < " + dir.path() + "/requests.jsonl");
  const std::vector<std::string> lines = output_lines(out);
  ASSERT_EQ(lines.size(), 2u) << out;
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_TRUE(first["ok"].get<bool>());
  EXPECT_EQ(first["samples"].size(), 2u);
  EXPECT_EQ(first["accepted"], nlohmann::json::array({true, false}));
  const nlohmann::json second = nlohmann::json::parse(lines[1]);
  EXPECT_FALSE(second["ok"].get<bool>());
  EXPECT_NE(second["error"].get<std::string>().find("gbnf: line 1"), std::string::npos) << lines[1];
}

TEST(CliGrammar, JsonSchemaTestSuiteOutputsValidateWithAjv) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/json_schema_suite";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/ajv-draft-04"))
      << "the JSON Schema Test Suite npm packages are missing: scripts/install-deps.sh --test installs them (npm ci in "
      << dir << ")";
  TempDir out;
  const ProcessResult r =
      run_program({"node", dir + "/run_suite.mjs", PAGODA_TEST_BINARY, out.path() + "/summary.json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json summary = nlohmann::json::parse(read_file(out.path() + "/summary.json"));
  EXPECT_EQ(summary["failures"].size(), 0u) << summary["failures"].dump(2);
  // The supported keywords' files compile (refusals name unsupported features: remote $ref, uniqueItems, the
  // complement of an integer type, multipleOf 1.5, ...).
  EXPECT_GE(summary["total"]["compiled"].get<int>(), 63) << r.out;
  EXPECT_GE(summary["total"]["samples"].get<int>(), 1250) << r.out;
}

TEST(CliBenchStructured, RunsOnTheBundledVocabulary) {
  const ProcessResult r = run_pagoda({"bench", "structured", "--passes", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["vocab_size"].get<int>(), 512);
  EXPECT_EQ(report["cases"].size(), 7u);
  for (const nlohmann::json& c : report["cases"]) EXPECT_GT(c["warm"]["count"].get<int>(), 0) << c.dump();
}

TEST(CliBenchStructured, MaskbenchSampleCountsEachOutcome) {
  const ProcessResult r = run_pagoda({"bench", "structured", "--maskbench", PAGODA_TEST_MASKBENCH_DIR, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  const nlohmann::json& total = report["total"];
  EXPECT_EQ(total["schemas"].get<int>(), 32);
  EXPECT_EQ(total["tests"].get<int>(), 61);
  EXPECT_EQ(total["passing"].get<int>(), 29) << r.out;
  EXPECT_EQ(total["compile_errors"].get<int>(), 3) << r.out;
  EXPECT_EQ(total["validation_errors"].get<int>(), 0) << r.out;
  EXPECT_EQ(total["invalidation_errors"].get<int>(), 0) << r.out;
  EXPECT_EQ(total["timeouts"].get<int>(), 0) << r.out;
  EXPECT_EQ(report["categories"].size(), 12u);
  EXPECT_EQ(report["categories"]["Github_easy"]["schemas"].get<int>(), 4);
  EXPECT_GT(total["mask_us"]["count"].get<int>(), 1000);
  EXPECT_GT(total["ttfm_us"]["p50"].get<double>(), 0.0);
  // Every failure is listed with its reason.
  EXPECT_EQ(report["failures"].size(), size_t(32 - 29));
  // The slowest schemas, to profile first.
  EXPECT_EQ(report["slowest_ttfm"].size(), 10u);
  EXPECT_EQ(report["slowest_mask"].size(), 10u);
  // A folder without MaskBench files, and a file that is not one, are errors; --passes belongs to the other mode.
  TempDir dir;
  EXPECT_NE(run_pagoda({"bench", "structured", "--maskbench", dir.path()}).err.find("no *.json file"),
            std::string::npos);
  write_file(dir.path() + "/x.json", R"({"schema":{}})");
  const ProcessResult bad = run_pagoda({"bench", "structured", "--maskbench", dir.path()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("not a MaskBench file"), std::string::npos) << bad.err;
  EXPECT_NE(run_pagoda({"bench", "structured", "--maskbench", dir.path(), "--passes", "2"}).exit_code, 0);
}

TEST(CliBenchStructured, MaskbenchListsTheSlowestSchemasAsAsked) {
  const ProcessResult r =
      run_pagoda({"bench", "structured", "--maskbench", PAGODA_TEST_MASKBENCH_DIR, "--slowest", "3", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  ASSERT_EQ(report["slowest_ttfm"].size(), 3u);
  ASSERT_EQ(report["slowest_mask"].size(), 3u);
  for (const char* key : {"slowest_ttfm", "slowest_mask"}) {
    const nlohmann::json& list = report[key];
    EXPECT_GE(list[0]["us"].get<double>(), list[1]["us"].get<double>()) << key;
    EXPECT_GE(list[1]["us"].get<double>(), list[2]["us"].get<double>()) << key;
  }
  // The table lists as many under each title (which files depends on the run's timings).
  const ProcessResult text =
      run_pagoda({"bench", "structured", "--maskbench", PAGODA_TEST_MASKBENCH_DIR, "--slowest", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const size_t ttfm_at = text.out.find("slowest by time to first mask:");
  const size_t mask_at = text.out.find("slowest by their slowest mask:");
  ASSERT_NE(ttfm_at, std::string::npos) << text.out;
  ASSERT_NE(mask_at, std::string::npos) << text.out;
  ASSERT_LT(ttfm_at, mask_at);
  auto files_listed = [](std::string_view lines) {
    size_t n = 0;
    for (size_t at = lines.find(" us  "); at != std::string_view::npos; at = lines.find(" us  ", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(files_listed(std::string_view(text.out).substr(ttfm_at, mask_at - ttfm_at)), 2u) << text.out;
  const size_t mask_end = text.out.find('\n', text.out.find('\n', text.out.find('\n', mask_at) + 1) + 1);
  EXPECT_EQ(files_listed(std::string_view(text.out).substr(mask_at, mask_end - mask_at)), 2u) << text.out;
  EXPECT_NE(run_pagoda({"bench", "structured", "--maskbench", PAGODA_TEST_MASKBENCH_DIR, "--slowest", "-1"}).exit_code,
            0);
  EXPECT_NE(run_pagoda({"bench", "structured", "--slowest", "3"}).exit_code, 0);  // --maskbench's option
}

TEST(CliBenchStructured, TpotWithAndWithoutEachGrammarThroughTheEngine) {
  const ProcessResult r =
      run_pagoda({"bench", "structured", "--tpot", "--requests", "2", "--max-tokens", "24", "--rounds", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // A row per case and the mean: both TPOTs measured, the batch's tokens counted (2 requests of 2-24 tokens).
  std::istringstream lines(r.out);
  std::string line;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("case", 0) == 0 || line.rfind("mean", 0) == 0) continue;
    ++rows;
    const size_t ms = line.find(" ms");
    ASSERT_NE(ms, std::string::npos) << line;
    EXPECT_NE(line.find(" ms", ms + 3), std::string::npos) << line;
    EXPECT_NE(line.find('%'), std::string::npos) << line;
  }
  EXPECT_EQ(rows, 7) << r.out;
  EXPECT_NE(r.out.find("mean"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("2 requests of up to 24 tokens"), std::string::npos) << r.err;
  // Each mode's options need it: none is accepted and ignored.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench", "structured", "-m", "x.gguf"}, {"bench", "structured", "--rounds", "2"},
        {"bench", "structured", "--tpot", "--json"}, {"bench", "structured", "--tpot", "--passes", "2"}}) {
    const ProcessResult misuse = run_pagoda(args);
    EXPECT_NE(misuse.exit_code, 0) << args.back();
    EXPECT_NE(misuse.err.find("--tpot"), std::string::npos) << misuse.err;
  }
  // The vocabulary comes from the model with --tpot.
  const ProcessResult bad = run_pagoda({"bench", "structured", "--tpot", "--tokenizer", "x.json"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--tokenizer"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pagoda::e2e
