// Tests for load_model (src/loader/loaded_model.h) and hf_folder_metadata (src/loader/hf_folder_metadata.h): the
// bundled model loads whole; a missing or broken file is a one-line error naming it; an HF folder loads with its
// tokenizer_config.json's chat template, and a type-confused chat_template list is an error, not a crash.
#include "loader/loaded_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "bench/hf_random_model_writer.h"
#include "kernels/kernels.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

class LoadedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("loader_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A tiny random-weight HF Llama folder (placeholder vocabulary: no tokenizer.json).
  fs::path write_hf_folder() {
    bench::RandomHfModelOptions o;
    o.shape = bench::ModelShape{.name = "tiny", .dim = 32, .hidden_dim = 64, .num_layers = 2, .num_heads = 4,
                                .num_kv_heads = 2, .vocab_size = 64, .context_length = 128,
                                .hf_architecture = "LlamaForCausalLM"};
    o.output_path = (dir_ / "hf").string();
    const Status st = bench::write_random_hf_model(o);
    EXPECT_TRUE(st.ok()) << st.message();
    return dir_ / "hf";
  }

  static void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  fs::path dir_;
};

TEST_F(LoadedModelTest, TheBundledModelLoadsWithItsTokenizer) {
  Result<LoadedModel> m = load_model("", kernels::best_kernels());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->source, "bundled:stories260K");
  ASSERT_NE(m->model, nullptr);
  ASSERT_NE(m->tokenizer, nullptr);
  EXPECT_EQ(m->model->config().vocab_size, m->tokenizer->vocab_size());
  EXPECT_EQ(m->checkpoint, nullptr);
}

TEST_F(LoadedModelTest, AMissingFileIsAnErrorNamingIt) {
  const std::string path = (dir_ / "no-such-model.gguf").string();
  Result<LoadedModel> m = load_model(path, kernels::best_kernels());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("no-such-model.gguf"), std::string::npos) << m.error();
}

TEST_F(LoadedModelTest, AFileThatIsNotAModelIsAnError) {
  write_text(dir_ / "junk.gguf", "this is not a GGUF file at all");
  Result<LoadedModel> m = load_model((dir_ / "junk.gguf").string(), kernels::best_kernels());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("junk.gguf"), std::string::npos) << m.error();
}

TEST_F(LoadedModelTest, AnHfFolderLoadsWithItsChatTemplate) {
  const fs::path hf = write_hf_folder();
  write_text(hf / "tokenizer_config.json",
             R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  Result<LoadedModel> m = load_model(hf.string(), kernels::best_kernels());
  ASSERT_TRUE(m.ok()) << m.error();
  ASSERT_NE(m->checkpoint, nullptr);
  EXPECT_EQ(m->model->config().num_layers, 2);
  EXPECT_EQ(m->tokenizer->vocab_size(), 64);
  Result<std::optional<std::string>> t = m->file->get_string("tokenizer.chat_template");
  ASSERT_TRUE(t.ok() && *t);
  EXPECT_EQ(**t, "D");
}

TEST_F(LoadedModelTest, ATypeConfusedChatTemplateListIsAnError) {
  const fs::path hf = write_hf_folder();
  for (const char* config : {R"({"chat_template": [{"name": 5, "template": "x"}]})",
                             R"({"chat_template": [{"name": "default", "template": 7}]})",
                             R"({"chat_template": [3]})", R"({"chat_template": 12})"}) {
    write_text(hf / "tokenizer_config.json", config);
    Result<LoadedModel> m = load_model(hf.string(), kernels::best_kernels());
    ASSERT_FALSE(m.ok()) << config;
    EXPECT_NE(m.error().find("chat_template"), std::string::npos) << m.error();
  }
}

}  // namespace
}  // namespace pagoda
