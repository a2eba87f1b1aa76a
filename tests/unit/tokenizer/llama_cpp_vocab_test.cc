// llama.cpp's own tokenizer test vocabularies (models/ggml-vocab-*.gguf with .inp inputs and .out ids, what its
// test-tokenizer-0 checks: no BOS, special tokens in the text as plain text). The files are not in this repo:
// the test runs when $PAGODA_LLAMA_CPP_DIR (or the default peer checkout, ~/.cache/pagoda-peer/llama.cpp) has
// them and skips visibly otherwise. Prints matched / total per vocabulary; every vocabulary that loads must
// match every case, and one that does not load must say which tokenizer key and value it refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

fs::path llama_cpp_dir() {
  if (const char* dir = std::getenv("PAGODA_LLAMA_CPP_DIR"); dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "") / ".cache/pagoda-peer/llama.cpp";
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Case {
  std::string text;
  std::vector<TokenId> ids;
};

// As test-tokenizer-0's read_tests: inputs separated by "\n__ggml_vocab_test__\n", one line of ids per input.
std::vector<Case> read_cases(const fs::path& inp, const fs::path& out) {
  const std::string raw = read_file(inp);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(raw.substr(pos));
      break;
    }
    texts.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::vector<Case> cases;
  std::istringstream lines(read_file(out));
  std::string line;
  for (size_t i = 0; std::getline(lines, line); ++i) {
    Case c;
    c.text = i < texts.size() ? texts[i] : "";
    std::istringstream ids(line);
    for (TokenId id = 0; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  if (cases.size() != texts.size()) cases.clear();
  return cases;
}

TEST(LlamaCppVocabTest, EveryVocabularyMatchesLlamaCppsExpectedIds) {
  const fs::path models = llama_cpp_dir() / "models";
  std::error_code ec;
  if (!fs::is_directory(models, ec)) {
    GTEST_SKIP() << models << " is absent (set PAGODA_LLAMA_CPP_DIR to a llama.cpp checkout to run llama.cpp's "
                              "tokenizer test vocabularies)";
  }
  std::vector<fs::path> vocabs;
  for (const auto& entry : fs::directory_iterator(models, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("ggml-vocab-") && name.ends_with(".gguf") && fs::exists(entry.path().string() + ".inp") &&
        fs::exists(entry.path().string() + ".out")) {
      vocabs.push_back(entry.path());
    }
  }
  std::sort(vocabs.begin(), vocabs.end());
  if (vocabs.empty()) GTEST_SKIP() << models << " has no ggml-vocab-*.gguf with .inp/.out pairs";
  int loaded = 0;
  int exact = 0;
  for (const fs::path& path : vocabs) {
    const std::string name = path.filename().string();
    const std::vector<Case> cases = read_cases(path.string() + ".inp", path.string() + ".out");
    ASSERT_FALSE(cases.empty()) << name << ": .inp and .out disagree on the number of cases";
    Result<format::GgufFile> file = format::GgufFile::open(path.string());
    ASSERT_TRUE(file.ok()) << file.error();
    Result<std::unique_ptr<Tokenizer>> tok = tokenizer_from_gguf(*file);
    if (!tok.ok()) {
      std::printf("[ llama.cpp vocab ] %-40s not loaded: %s\n", name.c_str(), tok.error().c_str());
      EXPECT_THAT(tok.error(), ::testing::HasSubstr("tokenizer.ggml.")) << name;
      continue;
    }
    ++loaded;
    size_t matched = 0;
    for (const Case& c : cases) {
      const std::vector<TokenId> ids = (*tok)->encode(c.text, /*add_bos=*/false, /*parse_special=*/false);
      if (ids == c.ids) {
        ++matched;
      } else {
        ADD_FAILURE() << name << ": '" << c.text << "' gives " << ::testing::PrintToString(ids) << ", llama.cpp "
                      << ::testing::PrintToString(c.ids);
      }
    }
    if (matched == cases.size()) ++exact;
    std::printf("[ llama.cpp vocab ] %-40s %zu / %zu\n", name.c_str(), matched, cases.size());
  }
  std::printf("[ llama.cpp vocab ] %d of %zu vocabularies load, %d match exactly\n", loaded, vocabs.size(), exact);
}

}  // namespace
}  // namespace pagoda
