// `pagoda gen-model`: a random-weight model of a named shape that pagoda itself loads and runs; same seed, same
// file; bad shapes and types are clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "format/gguf_reader.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

TEST(CliGenModelTest, TinyShapeLoadsAndRuns) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  ProcessResult r = run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", dir + "/t.gguf", "--seed", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gen-model: 21/21 (100%) output.weight"));

  auto file = format::GgufFile::open(dir + "/t.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_u32("llama.block_count")->value(), 2u);
  EXPECT_EQ(file->find_tensor("blk.0.attn_q.weight")->type, format::GgmlType::kF16);
  EXPECT_EQ(file->find_tensor("blk.0.attn_norm.weight")->type, format::GgmlType::kF32);
  EXPECT_NE(file->find_tensor("output.weight"), nullptr);

  ProcessResult run = run_pagoda({"run", "-m", dir + "/t.gguf", "-p", "hello", "-n", "8", "--temp", "0"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr("generated tokens: 8\n"));

  // Deterministic: the same seed writes the same bytes, another seed other weights.
  ASSERT_EQ(
      run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", dir + "/u.gguf", "--seed", "3"}).exit_code, 0);
  ASSERT_EQ(
      run_pagoda({"gen-model", "--shape", "tiny", "--type", "f16", "-o", dir + "/v.gguf", "--seed", "4"}).exit_code, 0);
  EXPECT_TRUE(read_file(dir + "/t.gguf") == read_file(dir + "/u.gguf"));
  EXPECT_FALSE(read_file(dir + "/t.gguf") == read_file(dir + "/v.gguf"));
}

TEST(CliGenModelTest, LayersCutTheModelShort) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  ProcessResult r = run_pagoda({"gen-model", "--shape", "stories15m", "--layers", "1", "-o", dir + "/s.gguf"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto file = format::GgufFile::open(dir + "/s.gguf");
  ASSERT_TRUE(file.ok()) << file.error();
  EXPECT_EQ(file->get_u32("llama.block_count")->value(), 1u);
  EXPECT_EQ(file->get_u32("llama.embedding_length")->value(), 288u);
}

TEST(CliGenModelTest, BadArgumentsAreClearErrors) {
  ProcessResult shape = run_pagoda({"gen-model", "--shape", "gpt5", "-o", "/tmp/x.gguf"});
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_THAT(shape.err,
              HasSubstr("unknown shape 'gpt5' (known: tiny, tiny-256, stories15m, tinyllama-1.1b, llama2-7b, "));
  for (const char* listed :
       {"qwen3.5-4b, ", "qwen3-next-80b-a3b, ", "deepseek-v2-lite, ", "gpt-oss-20b, ", "gemma4-26b-a4b)"})
    EXPECT_THAT(shape.err, HasSubstr(listed));
  ProcessResult type = run_pagoda({"gen-model", "--shape", "tiny", "--type", "q3_k", "-o", "/tmp/x.gguf"});
  EXPECT_EQ(type.exit_code, 1);
  EXPECT_THAT(type.err, HasSubstr("unknown --type 'q3_k'"));
  ProcessResult layers = run_pagoda({"gen-model", "--shape", "tiny", "--layers", "9", "-o", "/tmp/x.gguf"});
  EXPECT_EQ(layers.exit_code, 1);
  EXPECT_THAT(layers.err, HasSubstr("--layers must be in [1, 2]"));
}

}  // namespace
}  // namespace pagoda::e2e
