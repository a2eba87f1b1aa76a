// Tests for load_model (src/loader/loaded_model.h) and hf_folder_metadata (src/loader/hf_folder_metadata.h): the
// bundled model loads whole; a missing or broken file is a one-line error naming it; an HF folder loads with its
// tokenizer_config.json's chat template, and a type-confused chat_template list is an error, not a crash; an
// embedding folder's pooling and Matryoshka fields become GGUF keys.
#include "loader/loaded_model.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernels.h"
#include "synth/hf_random_model_writer.h"

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
    synth::RandomHfModelOptions o;
    o.shape = synth::ModelShape{.name = "tiny",
                                .dim = 32,
                                .hidden_dim = 64,
                                .num_layers = 2,
                                .num_heads = 4,
                                .num_kv_heads = 2,
                                .vocab_size = 64,
                                .context_length = 128,
                                .hf_architecture = "LlamaForCausalLM"};
    o.output_path = (dir_ / "hf").string();
    const Status st = synth::write_random_hf_model(o);
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
                             R"({"chat_template": [{"name": "default", "template": 7}]})", R"({"chat_template": [3]})",
                             R"({"chat_template": 12})"}) {
    write_text(hf / "tokenizer_config.json", config);
    Result<LoadedModel> m = load_model(hf.string(), kernels::best_kernels());
    ASSERT_FALSE(m.ok()) << config;
    EXPECT_NE(m.error().find("chat_template"), std::string::npos) << m.error();
  }
}

// sentence-transformers' pooling files and vLLM's Matryoshka fields become GGUF keys; malformed ones are errors
// naming the file, never a crash.
TEST_F(LoadedModelTest, AnHfFoldersPoolingAndMatryoshkaFieldsBecomeMetadata) {
  const fs::path hf = write_hf_folder();
  const std::string config = [&] {
    std::ifstream in(hf / "config.json");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  auto with_fields = [&](const std::string& fields) {
    write_text(hf / "config.json", config.substr(0, config.rfind('}')) + ", " + fields + "}");
  };
  // None of them: no keys.
  Result<LoadedModel> plain = load_model(hf.string(), kernels::best_kernels());
  ASSERT_TRUE(plain.ok()) << plain.error();
  EXPECT_FALSE(*plain->file->get_u32("llama.pooling_type"));
  EXPECT_FALSE(*plain->file->get_bool("pagoda.embedding.is_matryoshka"));

  fs::create_directories(hf / "pool");
  write_text(hf / "modules.json",
             R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "pool", "type": "sentence_transformers.models.Pooling"}])");
  const std::pair<const char*, uint32_t> modes[] = {{R"({"pooling_mode_mean_tokens": true})", 1},
                                                    {R"({"pooling_mode_cls_token": true})", 2},
                                                    {R"({"pooling_mode_lasttoken": true})", 3},
                                                    {R"({"pooling_mode": "lasttoken"})", 3}};
  for (const auto& [pooling, type] : modes) {
    write_text(hf / "pool" / "config.json", pooling);
    Result<LoadedModel> m = load_model(hf.string(), kernels::best_kernels());
    ASSERT_TRUE(m.ok()) << m.error();
    auto got = m->file->get_u32("llama.pooling_type");
    ASSERT_TRUE(got.ok() && *got) << pooling;
    EXPECT_EQ(**got, type) << pooling;
  }
  with_fields(R"("is_matryoshka": true, "matryoshka_dimensions": [64, 16])");
  Result<LoadedModel> m = load_model(hf.string(), kernels::best_kernels());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(**m->file->get_bool("pagoda.embedding.is_matryoshka"), true);
  EXPECT_EQ(**m->file->get_i32_array("pagoda.embedding.matryoshka_dimensions"), (std::vector<int32_t>{64, 16}));

  const std::pair<std::string, std::string> broken[] = {
      {"config.json", R"("is_matryoshka": "yes")"},
      {"config.json", R"("matryoshka_dimensions": [64, 0])"},
      {"config.json", R"("matryoshka_dimensions": {"a": 1})"},
      {"modules.json", R"({"not": "a list"})"},
      {"modules.json", R"([{"type": 5, "path": ""}])"},
      {"modules.json", R"([{"type": "Pooling", "path": "../../elsewhere"}])"},
      {"modules.json", R"([{"type": "Pooling", "path": "missing"}])"},
      {"pool/config.json", R"({"pooling_mode_max_tokens": true})"},
      {"pool/config.json", R"([1, 2])"}};
  const std::string modules = R"([{"type": "sentence_transformers.models.Pooling", "path": "pool"}])";
  for (const auto& [file, text] : broken) {
    write_text(hf / "config.json", config);
    write_text(hf / "modules.json", modules);
    write_text(hf / "pool" / "config.json", R"({"pooling_mode_lasttoken": true})");
    if (file == "config.json")
      with_fields(text);
    else
      write_text(hf / file, text);
    Result<LoadedModel> r = load_model(hf.string(), kernels::best_kernels());
    ASSERT_FALSE(r.ok()) << file << ": " << text;
    EXPECT_NE(r.error().find(fs::path(file).filename().string()), std::string::npos) << r.error();
  }
}

}  // namespace
}  // namespace pagoda
