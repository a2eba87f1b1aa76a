// The config's `quantization` key (and --quantization) through the real binary: the float bundled model is
// quantized at load in run, serve and bench, says so at start-up, and runs the same weights as a file that
// `pagoda quantize` wrote (the same greedy text); a model already in that type loads as it is; a bad value and the
// subcommands that pick weights themselves refuse it with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "run_binary.h"
#include "server_process.h"
#include "support/raw_http_client.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kGreedy = {"-q", "-p", "Once upon a time", "-n", "60", "--temp", "0"};

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

TEST(CliQuantizeOnLoadTest, RunWithTheConfigKeyMatchesAFileQuantizedAhead) {
  const TempDir dir;
  // Not q4_0: `pagoda quantize --type q4_0` writes llama.cpp's Q4_0 mixture (a q8_0 tied embedding, f16 rows that
  // are not whole blocks), where quantizing at load gives every whole-block matrix q4_0.
  for (const char* type : {"q8_0", "int8"}) {
    const std::string config = dir.path() + "/" + type + ".json";
    write_file(config, std::string(R"({"quantization": ")") + type + "\"}");
    const ProcessResult at_load = run_pagoda(with({"run", "--config", config}, kGreedy));
    ASSERT_EQ(at_load.exit_code, 0) << at_load.err;
    EXPECT_THAT(at_load.err, HasSubstr(std::string("pagoda: weights: quantized at load to ") + type));

    const std::string file = dir.path() + "/" + type + ".gguf";
    const ProcessResult q = run_pagoda({"quantize", PAGODA_TEST_BUNDLED_MODEL, file, "--type", type});
    ASSERT_EQ(q.exit_code, 0) << q.err;
    const ProcessResult ahead = run_pagoda(with({"run", "-m", file}, kGreedy));
    ASSERT_EQ(ahead.exit_code, 0) << ahead.err;
    EXPECT_EQ(at_load.out, ahead.out) << type;

    // The same file with the same quantization asked: nothing to do, it loads as it is.
    const ProcessResult again = run_pagoda(with({"run", "-m", file, "--quantization", type}, kGreedy));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_THAT(again.err, HasSubstr("stored so already"));
    EXPECT_EQ(again.out, ahead.out);
  }
  // Quantizing changes the weights: q4_0's text differs from the float model's somewhere in 60 tokens.
  const ProcessResult f32 = run_pagoda(with({"run"}, kGreedy));
  const ProcessResult q4 = run_pagoda(with({"run", "--quantization", "q4_0"}, kGreedy));
  ASSERT_EQ(f32.exit_code, 0);
  ASSERT_EQ(q4.exit_code, 0);
  EXPECT_NE(f32.out, q4.out);
}

TEST(CliQuantizeOnLoadTest, AwqCalibratesOnTheBuiltInText) {
  const ProcessResult r = run_pagoda(with({"run", "--quantization", "awq-int4"}, kGreedy));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("calibration over the built-in text"));
  EXPECT_THAT(r.err, HasSubstr("quantized at load to awq_int4_g128"));
}

TEST(CliQuantizeOnLoadTest, ServeAndBenchQuantizeAtLoad) {
  ServerProcess server({"--quantization", "q4_0"});
  ASSERT_TRUE(server.started()) << server.log();
  EXPECT_THAT(server.log(), HasSubstr("quantized at load to q4_0"));
  const HttpReply r = http_request(server.port(), "POST", "/v1/completions",
                                   R"({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0})");
  EXPECT_EQ(r.status, 200) << r.raw;

  const TempDir dir;
  write_file(dir.path() + "/q8.json", R"({"quantization": "q8_0"})");
  const ProcessResult b = run_pagoda({"bench", "latency", "--config", dir.path() + "/q8.json", "--prompt-len", "16",
                                      "--gen", "4", "--membw", "10"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(b.err, HasSubstr("quantized at load to q8_0"));
}

TEST(CliQuantizeOnLoadTest, BadValuesAndSubcommandsThatPickWeightsRefuseIt) {
  const ProcessResult bad = run_pagoda(with({"run", "--quantization", "q5_k"}, kGreedy));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.err, HasSubstr("quantization"));
  EXPECT_THAT(bad.err, HasSubstr("q5_k"));
  const TempDir dir;
  write_file(dir.path() + "/q4.json", R"({"quantization": "q4_0"})");
  const ProcessResult ablation = run_pagoda({"bench", "ablation", "--config", dir.path() + "/q4.json"});
  EXPECT_EQ(ablation.exit_code, 1);
  EXPECT_THAT(ablation.err, HasSubstr("leave quantization out here"));
}

}  // namespace
}  // namespace pagoda::e2e
