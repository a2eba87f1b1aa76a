// `pagoda convert --from llama2c`: reproduces the bundled GGUF byte for byte, and rejects bad checkpoints.
// `pagoda convert --from hf`: random HF folders of each family run like their converted GGUFs; bad folders are
// clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "format/gguf_reader.h"
#include "run_binary.h"

namespace pagoda::e2e {
namespace {

using ::testing::HasSubstr;

const std::string kAssets = PAGODA_TEST_ASSETS_DIR "/models/stories260K";

TEST(CliConvertTest, ReproducesTheBundledGgufExactly) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  ProcessResult r = run_pagoda({"convert", "--from", "llama2c", kAssets + "/stories260K.bin", kAssets + "/tok512.bin",
                                "-o", dir + "/out.gguf", "--name", "stories260K"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string produced = read_file(dir + "/out.gguf");
  const std::string bundled = read_file(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_EQ(produced.size(), bundled.size());
  EXPECT_TRUE(produced == bundled);

  // The converted file runs and gives the same text as the embedded copy.
  ProcessResult a =
      run_pagoda({"run", "-q", "-m", dir + "/out.gguf", "-p", "Once upon a time", "-n", "30", "--temp", "0"});
  ProcessResult b = run_pagoda({"run", "-q", "--threads", "1", "-p", "Once upon a time", "-n", "30", "--temp", "0"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(CliConvertTest, TruncatedCheckpointIsAClearError) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  const std::string ckpt = read_file(kAssets + "/stories260K.bin");
  write_file(dir + "/short.bin", ckpt.substr(0, ckpt.size() / 3));
  ProcessResult r =
      run_pagoda({"convert", "--from", "llama2c", dir + "/short.bin", kAssets + "/tok512.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("the header says the weights need"));

  write_file(dir + "/garbage.bin", std::string(64, '\xff'));
  ProcessResult g = run_pagoda(
      {"convert", "--from", "llama2c", dir + "/garbage.bin", kAssets + "/tok512.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(g.exit_code, 1);
  EXPECT_THAT(g.err, HasSubstr("not a llama2.c checkpoint"));

  write_file(dir + "/tok.bin", read_file(kAssets + "/tok512.bin").substr(0, 1000));
  ProcessResult t = run_pagoda(
      {"convert", "--from", "llama2c", kAssets + "/stories260K.bin", dir + "/tok.bin", "-o", dir + "/x.gguf"});
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_THAT(t.err, HasSubstr("tok.bin"));
}

TEST(CliConvertTest, UnsupportedSourceFormat) {
  ProcessResult r = run_pagoda({"convert", "--from", "onnx", "a", "b", "-o", "/tmp/x.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--from onnx is not supported"));
}

}  // namespace
}  // namespace pagoda::e2e

namespace pagoda::e2e {
namespace {

// Random HF folders of the three families (cut to one layer and 512 tokens), run directly and after
// `convert --from hf`: the same greedy text (the placeholder vocabulary maps text to the same ids both ways).
TEST(CliConvertTest, HfFoldersRunLikeTheirConvertedGguf) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  struct Family {
    std::string shape, type, arch;
  };
  for (const Family& f : {Family{"qwen3-0.6b", "f32", "qwen3"}, Family{"llama3.2-1b", "f16", "llama"},
                          Family{"qwen2.5-0.5b", "f32", "qwen2"}}) {
    SCOPED_TRACE(f.shape);
    const std::string folder = dir + "/" + f.shape, gguf = dir + "/" + f.shape + ".gguf";
    ProcessResult g = run_pagoda({"gen-model", "--shape", f.shape, "--format", "hf", "--type", f.type, "--layers", "1",
                                  "--vocab", "512", "-o", folder});
    ASSERT_EQ(g.exit_code, 0) << g.err;
    ProcessResult c = run_pagoda({"convert", "--from", "hf", folder, "-o", gguf});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_THAT(c.err, HasSubstr("has no tokenizer.json: using a placeholder vocabulary of 512 tokens"));
    auto file = format::GgufFile::open(gguf);
    ASSERT_TRUE(file.ok()) << file.error();
    EXPECT_EQ(*file->get_string("general.architecture").value(), f.arch);
    EXPECT_EQ(file->find_tensor("output.weight"), nullptr);  // tied
    EXPECT_EQ(file->find_tensor("rope_freqs.weight") != nullptr, f.arch == "llama");
    EXPECT_EQ(file->find_tensor("blk.0.attn_q_norm.weight") != nullptr, f.arch == "qwen3");
    EXPECT_EQ(file->find_tensor("blk.0.attn_v.bias") != nullptr, f.arch == "qwen2");

    const std::vector<std::string> args = {"-p", "Once upon a time", "-n", "24", "--temp", "0", "--ignore-eos", "-q"};
    std::vector<std::string> a_args = {"run", "-m", folder}, b_args = {"run", "-m", gguf};
    a_args.insert(a_args.end(), args.begin(), args.end());
    b_args.insert(b_args.end(), args.begin(), args.end());
    ProcessResult a = run_pagoda(a_args), b = run_pagoda(b_args);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_GT(a.out.size(), std::string("Once upon a time").size());
    EXPECT_EQ(a.out, b.out);
  }
}

TEST(CliConvertTest, BadHfFoldersAreClearErrors) {
  const TempDir dir_holder;
  const std::string& dir = dir_holder.path();
  const std::string folder = dir + "/m";
  ASSERT_EQ(run_pagoda({"gen-model", "--shape", "qwen3-0.6b", "--format", "hf", "--layers", "1", "--vocab", "300", "-o",
                        folder})
                .exit_code,
            0);
  const std::string config = read_file(folder + "/config.json");
  // A shard the index names but the folder lacks.
  write_file(folder + "/model.safetensors.index.json",
             R"({"weight_map": {"model.embed_tokens.weight": "model-00002-of-00002.safetensors"}})");
  ProcessResult shard = run_pagoda({"run", "-m", folder, "-p", "x"});
  EXPECT_EQ(shard.exit_code, 1);
  EXPECT_THAT(shard.err,
              HasSubstr("model-00002-of-00002.safetensors (holding tensor model.embed_tokens.weight) is missing"));
  std::filesystem::remove(folder + "/model.safetensors.index.json");

  // An architecture pagoda does not run.
  std::string gpt2 = config;
  gpt2.replace(gpt2.find("Qwen3ForCausalLM"), 16, "GPT2LMHeadModel");
  write_file(folder + "/config.json", gpt2);
  ProcessResult arch = run_pagoda({"convert", "--from", "hf", folder, "-o", dir + "/x.gguf"});
  EXPECT_EQ(arch.exit_code, 1);
  EXPECT_THAT(arch.err, HasSubstr("config.json: architectures[0] = \"GPT2LMHeadModel\" is not supported"));

  // Issue 23: a chat_template list entry whose name is not a string made nlohmann's value() throw (abort).
  write_file(folder + "/config.json", config);
  write_file(folder + "/tokenizer_config.json", R"({"chat_template": [{"name": 5, "template": "x"}]})");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "-m", folder, "-p", "x"},
        std::vector<std::string>{"convert", "--from", "hf", folder, "-o", dir + "/x.gguf"}}) {
    ProcessResult r = run_pagoda(args);
    EXPECT_EQ(r.term_signal, 0) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("tokenizer_config.json: chat_template[0].name must be a string"));
  }
  write_file(folder + "/tokenizer_config.json", R"({"chat_template": {"default": "x"}})");
  ProcessResult object = run_pagoda({"convert", "--from", "hf", folder, "-o", dir + "/x.gguf"});
  EXPECT_EQ(object.exit_code, 1) << object.err;
  EXPECT_THAT(object.err, HasSubstr("tokenizer_config.json: chat_template must be a string or a list"));
  std::filesystem::remove(folder + "/tokenizer_config.json");

  // A config whose sizes disagree with the tensors.
  std::string wide = config;
  wide.replace(wide.find("\"intermediate_size\": 3072"), 25, "\"intermediate_size\": 3000");
  write_file(folder + "/config.json", wide);
  ProcessResult shape = run_pagoda({"run", "-m", folder, "-p", "x"});
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_EQ(shape.term_signal, 0);
  EXPECT_THAT(shape.err, HasSubstr("model.layers.0.mlp.gate_proj.weight has shape [3072, 1024] but"));
  EXPECT_THAT(shape.err, HasSubstr("config.json gives [3000, 1024] (intermediate_size, hidden_size)"));
}

}  // namespace
}  // namespace pagoda::e2e
