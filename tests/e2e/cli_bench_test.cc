// `pagoda bench offline|batched|prefix|interference|ablation|isa` on the bundled model, `bench kv-memory` on
// named shapes and `bench gemv` on random 7B-shaped matrices: each runs to the end and its figures are consistent with the workload it was given (JSON: counts
// exact, rates positive, cache hits where the prompts share blocks; isa's table: a figure a level in each row). Speed itself is never asserted: these are
// benchmarks, measured, not tested. The ablation's --report page is opened in headless Chromium and its screenshot
// checked not to be blank.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

nlohmann::json run_json(const std::vector<std::string>& args) {
  const ProcessResult r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(CliBenchTest, OfflineCountsEveryRequestAndToken) {
  const auto j =
      run_json({"bench", "offline", "--num-prompts", "6", "--input-len", "8-40", "--output-len", "5", "--json"});
  EXPECT_EQ(j["num_requests"], 6);
  EXPECT_EQ(j["num_output_tokens"], 30);
  EXPECT_GT(j["output_tok_s"].get<double>(), 0.0);
  EXPECT_GE(j["peak_running"].get<int>(), 1);
}

TEST(CliBenchTest, BatchedGivesARowPerBatchSizeWithEveryDecodeTokenCounted) {
  const auto j = run_json({"bench", "batched", "--npp", "16", "--ntg", "6", "--npl", "1,3", "--json"});
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["b"], 1);
  EXPECT_EQ(j["rows"][0]["n_tg"], 5);  // the first token ends prefill; the other five are decode
  EXPECT_EQ(j["rows"][1]["b"], 3);
  EXPECT_EQ(j["rows"][1]["n_pp"], 48);
  EXPECT_LE(j["rows"][1]["n_tg"].get<int>(), 15);
  for (const auto& row : j["rows"]) EXPECT_GT(row["s_tg"].get<double>(), 0.0);
}

TEST(CliBenchTest, PrefixServesTheSharedBlocksFromTheCache) {
  const auto j = run_json(
      {"bench", "prefix", "--prefix-len", "64", "--suffix-len", "8", "--rounds", "2", "--block-size", "16", "--json"});
  EXPECT_EQ(j["rounds"], 2);
  EXPECT_EQ(j["second_cached_tokens"].get<double>(), 64.0);  // four whole blocks of 16
  EXPECT_GT(j["first_ttft_ms"].get<double>(), 0.0);
  EXPECT_GT(j["second_ttft_ms"].get<double>(), 0.0);
}

// kv-memory's arithmetic against hand-computed sizes: TinyLlama's 22 layers x 4 KV heads x 64, K and V; q8_0 blocks
// of 32 values take 34 bytes; int8 adds an f32 scale per head; 1 GiB over 36 blocks of 16 tokens (576) each.
TEST(CliBenchTest, KvMemoryComputesBytesPerTokenAndSequencesPerGib) {
  const auto j = run_json({"bench", "kv-memory", "--shapes", "tinyllama-1.1b", "--json"});
  ASSERT_EQ(j["shapes"].size(), 1u);
  const auto& t = j["shapes"][0]["types"];
  EXPECT_EQ(t["f32"]["bytes_per_token"], 2 * 22 * 4 * 64 * 4);
  EXPECT_EQ(t["f16"]["bytes_per_token"], 2 * 22 * 4 * 64 * 2);
  EXPECT_EQ(t["q8_0"]["bytes_per_token"], 2 * 22 * 4 * 2 * 34);
  EXPECT_EQ(t["q4_0"]["bytes_per_token"], 2 * 22 * 4 * 2 * 18);
  EXPECT_EQ(t["int8"]["bytes_per_token"], 2 * 22 * 4 * (64 + 4));
  EXPECT_EQ(t["f16"]["max_seqs"], (int64_t(1) << 30) / (2 * 22 * 4 * 64 * 2 * 16) / 36);
  const ProcessResult windowed = run_pagoda({"bench", "kv-memory", "--shapes", "gemma2-2b"});
  EXPECT_NE(windowed.exit_code, 0);
  EXPECT_NE(windowed.err.find("sliding-window"), std::string::npos) << windowed.err;
  EXPECT_NE(run_pagoda({"bench", "kv-memory", "--shapes", "no-such-shape"}).exit_code, 0);
}

// gemv: one figure per type and thread count over whole 7B layers (q4_K: 7 matrices, 4 x 4096 x 4096 + 3 x 11008 x
// 4096 weights at 148 bytes per 256 in q4_Kx8, whose scales are unpacked), rates positive; a type it cannot
// encode is refused by name.
TEST(CliBenchTest, GemvStreamsWholeSevenBLayersPerTypeAndThreadCount) {
  const auto j = run_json({"bench", "gemv", "--types", "q4_K", "--threads", "1", "--mib", "1", "--reps", "1",
                           "--membw", "40", "--json"});
  ASSERT_EQ(j["figures"].size(), 1u);
  const auto& f = j["figures"][0];
  EXPECT_EQ(f["type"], "q4_K");
  EXPECT_EQ(f["threads"], 1);
  EXPECT_EQ(f["stream_bytes"], (4 * 4096 * 4096 + 3 * 11008 * 4096) / 256 * 148);
  EXPECT_GT(f["stream_gbps"].get<double>(), 0.0);
  EXPECT_GT(f["cached_gbps"].get<double>(), 0.0);
  EXPECT_EQ(f["read_gbps"].get<double>(), 40.0);
  const ProcessResult bad = run_pagoda({"bench", "gemv", "--types", "f32"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("'f32'"), std::string::npos) << bad.err;
  EXPECT_NE(run_pagoda({"bench", "gemv", "--threads", "0"}).exit_code, 0);
}

TEST(CliBenchTest, PrefixWithTheCacheOffServesNothingFromIt) {
  const auto j = run_json(
      {"bench", "prefix", "--prefix-len", "64", "--suffix-len", "8", "--rounds", "1", "--no-prefix-cache", "--json"});
  EXPECT_EQ(j["second_cached_tokens"].get<double>(), 0.0);
}

TEST(CliBenchTest, InterferenceMeasuresTheStreamsWithAndWithoutChunking) {
  const auto j = run_json({"bench", "interference", "--streams", "2", "--long-prompt", "100", "--warmup", "4", "--tail",
                           "4", "--max-batched-tokens", "16", "--json"});
  for (const char* mode : {"chunked", "unchunked"}) {
    SCOPED_TRACE(mode);
    EXPECT_GE(j[mode]["itl_ms"]["count"].get<int>(), 2 * 7);  // at least warm-up + tail intervals per stream
    EXPECT_GE(j[mode]["during_prefill_itl_ms"]["count"].get<int>(), 1);
    EXPECT_GT(j[mode]["long_ttft_ms"].get<double>(), 0.0);
  }
}

TEST(CliBenchTest, AblationRunsEveryRowAndItsReportRendersInChromium) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  const auto j = run_json({"bench", "ablation", "--num-prompts", "3", "--request-rate", "50", "--input-len", "20",
                           "--shared-prefix", "16", "--output-len", "3", "--json", "--report", dir});
  ASSERT_EQ(j["rows"].size(), 10u);
  EXPECT_EQ(j["rows"][0]["row"], "baseline");
  EXPECT_EQ(j["rows"][0]["ratio_to_baseline"]["output_tok_s"], 1.0);
  EXPECT_EQ(j["rows"][9]["row"], "+chunked");
  EXPECT_EQ(j["rows"][3]["weights"], "q4_0");
  for (const auto& row : j["rows"]) {
    EXPECT_EQ(row["ttft_samples_ms"].size(), 3u) << row["row"];
    EXPECT_GT(row["output_tok_s"].get<double>(), 0.0) << row["row"];
  }
  // Contiguous KV reserves max_seq_len, paged only what a sequence fills: the capacity column says so.
  EXPECT_GT(j["rows"][5]["max_concurrent_seqs"].get<int>(), j["rows"][4]["max_concurrent_seqs"].get<int>());
  // The prefix cache served the 16-token shared block to the requests after the first.
  EXPECT_GT(j["rows"][7]["prefix_hit_tokens"].get<int>(), 0);
  ASSERT_TRUE(std::filesystem::exists(dir + "/index.html"));

  const std::string node_dir = std::string(PAGODA_TEST_E2E_DIR) + "/node_clients";
  ASSERT_TRUE(std::filesystem::exists(node_dir + "/node_modules/playwright-core"))
      << "playwright-core is missing: `make test` installs it (npm ci in " << node_dir << ")";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/chromium")) << "Debian's chromium is missing: `make test` installs it";
  std::string out;
  if (FILE* p = ::popen(("node " + node_dir + "/report_page_test.mjs " + dir + " 10 4 2>&1").c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  EXPECT_NE(out.find("report page ok"), std::string::npos) << out;
}

// `bench isa`'s model rows run on the threads `pagoda run` would use (one for a model this small), not on the kernel
// table's pool of every core, and each row has a figure for every level in its header (avx2 among them), then the
// ratio.
TEST(CliBenchTest, IsaRunsTheModelOnTheThreadsRunWouldUseAtEveryLevel) {
  const ProcessResult r =
      run_pagoda({"bench", "isa", "--model-only", "--rounds", "1", "--prompt-len", "16", "--gen", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("model bundled:stories260K (1 threads;"), std::string::npos) << r.out;
  std::istringstream lines(r.out);
  size_t num_levels = 0, num_rows = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (!w.empty() && w[0] == "figure") {
      num_levels = w.size() - 2;  // "figure", the levels, "LAST/base"
      EXPECT_EQ(w[1], "avx2") << line;
    } else if (line.rfind("prefill pp16 tok/s", 0) == 0 || line.rfind("decode tg8 tok/s", 0) == 0 ||
               line.rfind("decode MBU %", 0) == 0) {
      ++num_rows;
      EXPECT_EQ(w.size(), 3 + num_levels + 1) << line;  // three words of name, the levels, the ratio
    }
  }
  EXPECT_GE(num_levels, 1u) << r.out;
  EXPECT_EQ(num_rows, 3u) << r.out;
}

TEST(CliBenchTest, BadScenarioArgumentsAreCleanErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"bench", "batched", "--npl", "0"},
                                               {"bench", "batched", "--ntg", "1"},
                                               {"bench", "prefix", "--rounds", "0"},
                                               {"bench", "prefix", "--prefix-len", "100000"},
                                               {"bench", "interference", "--long-prompt", "100000"},
                                               {"bench", "batched", "--batch-size", "2", "--npl", "4"},
                                               {"bench", "ablation", "--scenario", "fast"},
                                               {"bench", "ablation", "--shared-prefix", "64", "--input-len", "32"},
                                               {"bench", "ablation", "-m", "/nonexistent.gguf"},
                                               {"tune", "--tpot-slo", "-1"}}) {
    const ProcessResult r = run_pagoda(args);
    EXPECT_EQ(r.exit_code, 1) << args[1] << " " << args[2] << ": " << r.err;
    EXPECT_NE(r.err.find("pagoda: error:"), std::string::npos) << r.err;
  }
  // The engine's latency targets: positive milliseconds, and only with the automatic prefill budget they pace.
  ProcessResult r = run_pagoda({"bench", "interference", "--tpot-slo", "0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--tpot-slo must be a positive number of milliseconds"), std::string::npos) << r.err;
  r = run_pagoda({"bench", "interference", "--ttft-slo", "500", "--max-prefill-with-decodes", "8"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--ttft-slo (slo.ttft_ms) paces the automatic prefill budget"), std::string::npos) << r.err;
  // Accepted, they show in the start-up line.
  r = run_pagoda({"bench", "interference", "--streams", "2", "--long-prompt", "64",
                  "--tpot-slo", "40", "--ttft-slo", "900"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("steps of at most 40 ms (--tpot-slo), more for a prompt about to miss 900 ms"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace pagoda::e2e
