// The placeholder vocabulary.
#include "format/placeholder_vocabulary.h"

#include <string>
#include <vector>

namespace pagoda::format {

// 3 specials, 256 byte pieces, then unique "▁word" pieces so llama.cpp accepts the vocabulary, and last a control
// "<|endoftext|>" (llama.cpp looks that token up by name in any model whose general.name says Phi-3).
void add_placeholder_vocabulary(GgufWriter& w, int32_t vocab_size) {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  tokens.reserve(size_t(vocab_size));
  auto add = [&](std::string piece, int32_t type) {
    scores.push_back(-float(tokens.size()));
    tokens.push_back(std::move(piece));
    types.push_back(type);
  };
  add("<unk>", 2);
  add("<s>", 3);
  add("</s>", 3);
  const char* hex = "0123456789ABCDEF";
  for (int32_t b = 0; b < 256 && int32_t(tokens.size()) < vocab_size; ++b)
    add(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">", 6);
  const int32_t num_words = vocab_size - 1;
  for (int32_t i = 0; int32_t(tokens.size()) < num_words; ++i) {
    std::string word = "\xE2\x96\x81";
    for (int32_t v = i;; v = v / 26 - 1) {
      word += char('a' + v % 26);
      if (v < 26) break;
    }
    add(std::move(word), 1);
  }
  if (int32_t(tokens.size()) < vocab_size) add("<|endoftext|>", 3);
  w.set("tokenizer.ggml.model", GgufValue::string("llama"));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
  w.set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
  w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  w.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
}

}  // namespace pagoda::format
