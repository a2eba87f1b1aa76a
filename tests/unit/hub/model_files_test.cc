// Tests for choose_model_files: llama.cpp's quant rule, the closest type when neither default is there, split sets,
// safetensors folders, and the errors that list what a repository has.
#include "hub/model_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace pagoda::hub {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::vector<std::string> kGgufRepo = {
    ".gitattributes",
    "README.md",
    "model-Q2_K.gguf",
    "model-Q4_K_M.gguf",
    "model-Q8_0.gguf",
    "mmproj-model-f16.gguf",
    "model-F16-00001-of-00002.gguf",
    "model-F16-00002-of-00002.gguf",
};

TEST(ModelFilesTest, DefaultIsQ4KM) {
  auto c = choose_model_files(kGgufRepo, "o/r", "", "");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->model_file, "model-Q4_K_M.gguf");
  EXPECT_THAT(c->files, ElementsAre("model-Q4_K_M.gguf"));
}

TEST(ModelFilesTest, QuantIsCaseInsensitiveAndTakesEverySplit) {
  auto c = choose_model_files(kGgufRepo, "o/r", "f16", "");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->model_file, "model-F16-00001-of-00002.gguf");
  EXPECT_THAT(c->files, ElementsAre("model-F16-00001-of-00002.gguf", "model-F16-00002-of-00002.gguf"));
  auto q8 = choose_model_files(kGgufRepo, "o/r", "q8_0", "");
  ASSERT_TRUE(q8.ok());
  EXPECT_EQ(q8->model_file, "model-Q8_0.gguf");
}

TEST(ModelFilesTest, WithoutTheDefaultsTheClosestTypeToFourBits) {
  const std::vector<std::string> repo = {"m.Q2_K.gguf", "m.Q6_K.gguf", "m.F16.gguf", "m.Q5_K_S.gguf",
                                         "m.Q3_K_L.gguf"};
  auto c = choose_model_files(repo, "o/r", "", "");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->model_file, "m.Q5_K_S.gguf");  // 3 and 5 bits tie; the larger wins
  auto q8 = choose_model_files({"m.Q8_0.gguf", "m.F16.gguf"}, "o/r", "", "");
  EXPECT_EQ(q8->model_file, "m.Q8_0.gguf");  // llama.cpp's second default
  auto f = choose_model_files({"m-f32.gguf", "m-f16.gguf", "m-bf16.gguf"}, "o/r", "", "");
  EXPECT_EQ(f->model_file, "m-f16.gguf");
}

TEST(ModelFilesTest, AnAbsentQuantListsWhatThereIs) {
  auto c = choose_model_files(kGgufRepo, "o/r", "IQ2_XS", "");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error(), HasSubstr("o/r has no IQ2_XS GGUF (GGUF files: model-Q2_K.gguf, model-Q4_K_M.gguf"));
  EXPECT_EQ(c.status().code(), StatusCode::kNotFound);
}

TEST(ModelFilesTest, AnExactFile) {
  auto c = choose_model_files(kGgufRepo, "o/r", "", "model-Q2_K.gguf");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_THAT(c->files, ElementsAre("model-Q2_K.gguf"));
  auto split = choose_model_files(kGgufRepo, "o/r", "", "model-F16-00001-of-00002.gguf");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->files.size(), 2u);
  EXPECT_FALSE(choose_model_files(kGgufRepo, "o/r", "", "model-F16-00002-of-00002.gguf").ok());
  EXPECT_FALSE(choose_model_files(kGgufRepo, "o/r", "", "README.md").ok());
  EXPECT_FALSE(choose_model_files(kGgufRepo, "o/r", "", "nope.gguf").ok());
}

TEST(ModelFilesTest, ASafetensorsRepositoryIsAFolder) {
  const std::vector<std::string> repo = {".gitattributes",       "README.md",         "config.json",
                                         "generation_config.json", "model.safetensors", "pytorch_model.bin",
                                         "tokenizer.json",       "tokenizer_config.json", "onnx/model.onnx"};
  auto c = choose_model_files(repo, "o/r", "", "");
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->model_file, "");
  EXPECT_THAT(c->files, ElementsAre("README.md", "config.json", "generation_config.json", "model.safetensors",
                                    "tokenizer.json", "tokenizer_config.json"));
  EXPECT_FALSE(choose_model_files(repo, "o/r", "Q4_K_M", "").ok());
  EXPECT_FALSE(choose_model_files({"config.json", "pytorch_model.bin"}, "o/r", "", "").ok());
  EXPECT_FALSE(choose_model_files({"README.md"}, "o/r", "", "").ok());
}

TEST(ModelFilesTest, RepoSpecs) {
  auto s = parse_repo_spec("unsloth/Qwen3-0.6B-GGUF:Q8_0");
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->repo, "unsloth/Qwen3-0.6B-GGUF");
  EXPECT_EQ(s->quant, "Q8_0");
  EXPECT_EQ(parse_repo_spec("a/b")->quant, "");
  EXPECT_FALSE(parse_repo_spec("a/b:").ok());
  EXPECT_FALSE(parse_repo_spec("ab").ok());
  EXPECT_FALSE(parse_repo_spec("a/b/c").ok());
  EXPECT_FALSE(parse_repo_spec("../b").ok());
  EXPECT_FALSE(parse_repo_spec("a/b c").ok());
}

}  // namespace
}  // namespace pagoda::hub
