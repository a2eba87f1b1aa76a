// read_tok512_vocab: parses llama2.c's tokenizer.bin layout (int32 max_token_length, then per token float32
// score, int32 length, bytes) into a Vocab.
#include "tok512_vocab.h"

#include "core/check.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace pagoda::testing {
namespace {

constexpr int32_t kNumSpecialTokens = 3;  // <unk>, <s>, </s>
constexpr int32_t kNumByteTokens = 256;

std::string spaces_to_markers(const std::string& piece) {
  std::string out;
  for (const char c : piece) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string tok512_path() {
  // Appended in place: GCC 12's -Warray-bounds misreads the temporary of `std::string(dir) + "..."` here.
  std::string path = PAGODA_TEST_ASSETS_DIR;
  path += "/models/stories260K/tok512.bin";
  return path;
}

Result<Vocab> read_tok512_vocab(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(fmt::format("{}: cannot open", path));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  auto read = [&](void* dst, size_t n) {
    if (bytes.size() - pos < n) return false;
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
    return true;
  };
  int32_t max_token_length = 0;
  if (!read(&max_token_length, 4)) return make_error(fmt::format("{}: truncated header", path));

  Vocab vocab;
  while (pos < bytes.size()) {
    float score = 0;
    int32_t length = 0;
    if (!read(&score, 4) || !read(&length, 4) || length < 0 || size_t(length) > bytes.size() - pos) {
      return make_error(fmt::format("{}: truncated at token {}", path, vocab.size()));
    }
    std::string piece(bytes.data() + pos, size_t(length));
    pos += size_t(length);
    const int32_t id = vocab.size();
    TokenType type = TokenType::kNormal;
    if (id == 0) {
      type = TokenType::kUnknown;
    } else if (id < kNumSpecialTokens) {
      type = TokenType::kControl;
      piece = id == 1 ? "<s>" : "</s>";  // llama2.c stores "\n<s>\n" for display; SentencePiece says "<s>"
    } else if (id < kNumSpecialTokens + kNumByteTokens) {
      type = TokenType::kByte;
    } else {
      piece = spaces_to_markers(piece);
    }
    vocab.pieces.push_back(std::move(piece));
    vocab.scores.push_back(score);
    vocab.types.push_back(type);
  }
  if (vocab.size() < kNumSpecialTokens + kNumByteTokens) {
    return make_error(fmt::format("{}: only {} tokens", path, vocab.size()));
  }
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  vocab.unk_id = 0;
  return vocab;
}

const SpmTokenizer& stories_tokenizer() {
  static const SpmTokenizer* tokenizer = [] {
    Result<Vocab> vocab = read_tok512_vocab(tok512_path());
    PAGODA_CHECK(vocab.ok(), "{}", vocab.error());
    return new SpmTokenizer(std::move(vocab).value());
  }();
  return *tokenizer;
}

}  // namespace pagoda::testing
