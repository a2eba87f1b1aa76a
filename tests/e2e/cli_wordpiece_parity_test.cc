// WordPiece parity: `pagoda tokenize --tokenizer` on llama.cpp's BERT test vocabulary (models/ggml-vocab-bert-bge.gguf)
// against llama.cpp's own llama-tokenize on the same seeded random texts (mixed scripts, accents precomposed and
// combining, punctuation, symbols, CJK, emoji, controls, odd spaces), [CLS] and [SEP] added by both. The reference
// ids come from a fresh llama-tokenize run, never from a stored golden. Skipped, visibly, unless a llama.cpp checkout
// with a built llama-tokenize is at $PAGODA_LLAMA_CPP_DIR (default ~/.cache/pagoda-peer/llama.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "run_binary.h"

namespace pagoda::e2e {
namespace {

namespace fs = std::filesystem;

fs::path llama_cpp_dir() {
  if (const char* dir = std::getenv("PAGODA_LLAMA_CPP_DIR"); dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr ? home : "") / ".cache/pagoda-peer/llama.cpp";
}

// Words and characters a BERT tokenizer treats differently, drawn at random.
std::string random_text(uint32_t seed, int num_pieces) {
  static const std::vector<std::string> kPieces = {
      "hello", "World", "Tokenizer", "naïve", "Café", "e\xCC\x81t\xC3\xA9", "ÅNGSTRÖM", "straße", "İstanbul", "ﬁne",
      "über", "déjà", "中文", "日本語", "한국어", "ひらがな", "привет", "Ωμέγα", "مرحبا", "שלום", "नमस्ते", "ก\xE0\xB8\xB2",
      "😀", "🦙", "👍🏽", "😶\xE2\x80\x8D🌫\xEF\xB8\x8F", ".", ",", "!", "?", "'", "\"", "(", ")", "[", "]", "$", "%",
      "&", "#", "@", "^", "`", "~", "\\", "|", "<", ">", "€", "£", "©", "°", "±", "×", "—", "…", "«", "»", "①",
      "\xE2\x80\x8B", "\xC2\xAD", "\xEF\xBB\xBF", "\x07", "\x7F", "\xC2\x85", "\xEE\x80\x80", " ", "  ", "\t", "\n",
      "\xC2\xA0", "\xE2\x80\x83", "\xE3\x80\x80", "\xE2\x80\xA8", "42", "3.14", "x86_64", "e-mail", "don't", "[CLS]",
      "[UNK]", "supercalifragilisticexpialidocious", "Ⅻ", "\xF0\xA0\x80\x80"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<size_t> pick(0, kPieces.size() - 1);
  std::string text;
  for (int i = 0; i < num_pieces; ++i) {
    text += kPieces[pick(rng)];
    if (rng() % 3 != 0) text += ' ';
  }
  return text;
}

std::string squeeze(std::string s) {
  std::erase_if(s, [](char c) { return c == ' ' || c == '\n'; });
  return s;
}

TEST(WordPieceParityTest, BertBgeIdsMatchLlamaTokenizeOnRandomTexts) {
  const fs::path dir = llama_cpp_dir();
  const fs::path vocab = dir / "models/ggml-vocab-bert-bge.gguf";
  const fs::path bin = dir / "build/bin";
  if (!fs::exists(vocab) || !fs::exists(bin / "llama-tokenize")) {
    GTEST_SKIP() << vocab << " or " << bin / "llama-tokenize"
                 << " is absent (set PAGODA_LLAMA_CPP_DIR to a built llama.cpp checkout)";
  }
  TempDir tmp;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::string text = random_text(seed, 400);
    const std::string path = tmp.path() + "/text.txt";
    write_file(path, text);
    const ProcessResult theirs =
        run_program({(bin / "llama-tokenize").string(), "-m", vocab.string(), "-f", path, "--ids", "--log-disable",
                     "--no-escape"},
                    {"LD_LIBRARY_PATH=" + bin.string()});
    ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
    const std::string theirs_ids = theirs.out.substr(theirs.out.rfind('['));
    const ProcessResult ours = run_pagoda({"tokenize", "--tokenizer", vocab.string(), text});
    ASSERT_EQ(ours.exit_code, 0) << ours.err;
    EXPECT_EQ(squeeze(ours.out), squeeze(theirs_ids)) << "text: " << text;
    EXPECT_GT(std::count(theirs_ids.begin(), theirs_ids.end(), ','), 400);  // a long text, not an error line
  }
}

}  // namespace
}  // namespace pagoda::e2e
