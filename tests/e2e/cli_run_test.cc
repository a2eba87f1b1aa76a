// `pagoda run` and `pagoda tokenize` on the bundled model, through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The issue's reference (also what llama.cpp prints for the same GGUF): greedy, 196 new tokens.
constexpr const char* kGoldenStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she "
    "saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do. She said, \"I want "
    "to play with your ball, but I can't find it.\"\n"
    "Lily was sad and didn't know what to do. She said, \"I'm sorry, Lily. I didn't know what to do.\"\n"
    "Lily didn't want to help her mom, so she";

std::string without_trailing_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

TEST(CliRunTest, GreedyStoryIsTheGoldenText) {
  ProcessResult r = run_pagoda({"run", "-p", "Once upon a time", "-n", "196", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_trailing_newline(r.out), kGoldenStory);
  EXPECT_THAT(r.err, HasSubstr("prompt tokens: 5\n"));
  EXPECT_THAT(r.err, HasSubstr("generated tokens: 196\n"));
  EXPECT_THAT(r.err, HasSubstr("TTFT: "));
  EXPECT_THAT(r.err, HasSubstr("TPOT: "));
  EXPECT_THAT(r.err, HasSubstr("tokens/s"));
}

// Every level's kernels (a level this CPU lacks falls back to the best one, with a message) give the golden text.
TEST(CliRunTest, EveryKernelLevelGivesTheSameGoldenText) {
  for (const char* level : {"scalar", "avx2", "avx_vnni", "avx512", "amx"}) {
    ProcessResult r = run_pagoda({"run", "-q", "-p", "Once upon a time", "-n", "196", "--temp", "0"},
                                 {std::string("PAGODA_ISA=") + level});
    ASSERT_EQ(r.exit_code, 0) << level << ": " << r.err;
    EXPECT_EQ(without_trailing_newline(r.out), kGoldenStory) << level;
  }
}

TEST(CliRunTest, AttentionAndFusionSwitchesGiveTheGoldenText) {
  // The ablation switches change speed, not the greedy text.
  for (const std::vector<std::string>& flags :
       std::vector<std::vector<std::string>>{{"--attention", "naive"}, {"--no-fusion"}}) {
    std::vector<std::string> args = {"run", "-q", "-p", "Once upon a time", "-n", "196", "--temp", "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    ProcessResult r = run_pagoda(args);
    ASSERT_EQ(r.exit_code, 0) << flags[0] << ": " << r.err;
    EXPECT_EQ(without_trailing_newline(r.out), kGoldenStory) << flags[0];
  }
}

TEST(CliRunTest, Int8KvCacheFollowsTheGoldenTextForItsFirstHalf) {
  // INT8 KV rounds K and V, so greedy decoding eventually takes a different near-tie (measured: after about
  // 270 of the golden text's 420 characters, with either attention kernel). It must not drift early.
  for (const char* attention : {"flash", "naive"}) {
    ProcessResult r = run_pagoda({"run", "-q", "-p", "Once upon a time", "-n", "196", "--temp", "0", "--kv-cache-dtype",
                                  "int8", "--attention", attention});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string golden = kGoldenStory;
    size_t common = 0;
    while (common < r.out.size() && common < golden.size() && r.out[common] == golden[common]) ++common;
    EXPECT_GE(common, golden.size() / 2) << attention << ": " << r.out;
  }
}

TEST(CliRunTest, UnknownKvQuantIsAClearError) {
  ProcessResult r = run_pagoda({"run", "-q", "-p", "Once", "-n", "4", "--kv-cache-dtype", "int3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("int3"));
  EXPECT_TRUE(r.out.empty());
}

TEST(CliRunTest, LlamaCppCacheTypeFlagsSetEachSideAndABlockTypeTheHeadsCannotHoldIsRefused) {
  ProcessResult f32 = run_pagoda({"run", "-q", "-p", "Once upon a time", "-n", "40", "--temp", "0", "-ctk", "f32",
                                  "--cache-type-v", "f32"});
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_EQ(f32.out.substr(0, 60), std::string(kGoldenStory).substr(0, 60));
  ProcessResult mixed = run_pagoda({"run", "-p", "Once upon a time", "-n", "8", "-ctk", "bf16", "-ctv", "int8"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  ProcessResult q8 = run_pagoda({"run", "-q", "-p", "Once", "-n", "4", "-ctv", "q8_0"});
  EXPECT_EQ(q8.exit_code, 1);
  EXPECT_THAT(q8.err, HasSubstr("q8_0 KV cache needs heads of a multiple of 32 values; this model's have 8"));
  EXPECT_TRUE(q8.out.empty());
}

TEST(CliRunTest, SameSeedSameTextAndSeedsMatter) {
  auto sample = [](const std::string& seed) {
    ProcessResult r = run_pagoda({"run", "-q", "-p", "Once upon a time", "-n", "60", "--temp", "1.0", "--top-k", "0",
                                  "--top-p", "1", "--min-p", "0", "--seed", seed});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string a = sample("42");
  EXPECT_EQ(a, sample("42"));
  // Three other seeds: with temperature 1 over 60 tokens, at least one differs from seed 42.
  const std::string b = sample("7"), c = sample("8"), d = sample("9");
  EXPECT_TRUE(a != b || a != c || a != d);
  EXPECT_THAT(a, StartsWith("Once upon a time"));
}

TEST(CliRunTest, MaxTokensAndStopStrings) {
  ProcessResult r = run_pagoda({"run", "-p", "Once upon a time", "-n", "10", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("generated tokens: 10\n"));
  EXPECT_THAT(r.err, HasSubstr("finish reason: length"));

  // Greedy text continues "..., there was a little girl named Lily."; stop at " girl".
  ProcessResult s = run_pagoda({"run", "-p", "Once upon a time", "-n", "100", "--temp", "0", "--stop", " girl"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(without_trailing_newline(s.out), "Once upon a time, there was a little");
  EXPECT_THAT(s.err, HasSubstr("finish reason: stop"));
}

TEST(CliRunTest, PrintConfigShowsFileAndFlagOverrides) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  write_file(dir + "/c.json",
             R"({"quantization":"q4_0","max_seq_len":4096,"batch_size":"auto","kv_cache":{"max_entries":512,)"
             R"("block_size":16,"dtype":"int8"},"parallel":{"tensor_parallel":1,"pipeline_parallel":1}})");
  ProcessResult r = run_pagoda({"run", "--config", dir + "/c.json", "--max-seq-len", "128", "--print-config"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"max_seq_len\": 128"));  // the flag wins over the file's 4096
  EXPECT_THAT(r.out, HasSubstr("\"quantization\": \"q4_0\""));
  EXPECT_THAT(r.out, HasSubstr("\"max_entries\": 512"));
  EXPECT_THAT(r.out, HasSubstr("\"batch_size\": \"auto\""));
  EXPECT_THAT(r.out, HasSubstr("\"dtype\": \"int8\""));
  // `run` has no KV pool to size, so the pool's block count is noted as unused; kv_cache.dtype is active.
  EXPECT_THAT(r.out, HasSubstr("kv_cache.max_entries = 512: run runs one sequence at a time; not used"));
  EXPECT_THAT(r.out, Not(HasSubstr("kv_cache.dtype")));
}

TEST(CliRunTest, TheSloKeyIsNotedUnusedByRunAndActsInTheEngineBenchmarks) {
  const TempDir dir;
  const std::string path = dir.path() + "/slo.json";
  write_file(path, R"({"slo": {"ttft_ms": 900, "tpot_ms": 40}})");
  ProcessResult r = run_pagoda({"run", "--config", path, "-q", "-p", "Once", "-n", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("slo.ttft_ms = 900, slo.tpot_ms = 40: this subcommand does not schedule concurrent "
                               "streams"));
  r = run_pagoda({"bench", "interference", "--config", path, "--streams", "2", "--long-prompt", "64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("steps of at most 40 ms"));
  EXPECT_THAT(r.err, HasSubstr("about to miss 900 ms"));
  EXPECT_THAT(r.err, Not(HasSubstr("not used")));
}

TEST(CliRunTest, BlockSizeSetsTheKvBlocksAndKeepsTheText) {
  const TempDir dir;
  std::vector<std::string> outs;
  for (int page : {4, 16, 64}) {
    const std::string path = dir.path() + "/p" + std::to_string(page) + ".json";
    write_file(path, R"({"kv_cache": {"block_size": )" + std::to_string(page) + "}}");
    ProcessResult r = run_pagoda({"run", "--config", path, "-q", "-p", "Once upon a time", "-n", "80", "--temp", "0"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    outs.push_back(r.out);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[1], outs[2]);
}

TEST(CliRunTest, ConfigFileSetsTheContextLength) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  write_file(dir + "/c.json", R"({"max_seq_len": 8})");
  // 5 prompt tokens + at most 3 new ones fit in a sequence of 8.
  ProcessResult r =
      run_pagoda({"run", "--config", dir + "/c.json", "-p", "Once upon a time", "-n", "50", "--temp", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("generated tokens: 3\n"));
  EXPECT_THAT(r.err, HasSubstr("finish reason: length"));
}

TEST(CliTokenizeTest, ReferenceIds) {
  struct Case {
    const char* text;
    const char* ids;
  } cases[] = {
      {"Once upon a time", "1 403 407 261 378"},
      {"Hello, world! 123", "1 346 306 414 432 263 304 341 443 410 475 479 472"},
      {"naïve café 日本", "1 297 412 198 178 360 280 412 431 485 410 233 154 168 233 159 175"},
  };
  for (const Case& c : cases) {
    ProcessResult r = run_pagoda({"tokenize", c.text});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(without_trailing_newline(r.out), c.ids) << c.text;
  }
  ProcessResult no_bos = run_pagoda({"tokenize", "--no-bos", "Once upon a time"});
  EXPECT_EQ(without_trailing_newline(no_bos.out), "403 407 261 378");
}

// "</s>" written in the text is EOS (2), and the text after it gets SentencePiece's dummy prefix again, as
// llama.cpp tokenizes it; with --no-parse-special it is plain text.
TEST(CliTokenizeTest, NoParseSpecialReadsSpecialTokensAsText) {
  ProcessResult parsed = run_pagoda({"tokenize", "Once</s> upon"});
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  EXPECT_EQ(without_trailing_newline(parsed.out), "1 403 2 410 407");
  ProcessResult plain = run_pagoda({"tokenize", "--no-parse-special", "Once</s> upon"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(without_trailing_newline(plain.out), "1 403 504 492 419 505 407");
}

}  // namespace
}  // namespace pagoda::e2e
