// The BpeVocab -> GGUF tokenizer keys writer.
#include "tokenizer/bpe_vocab_gguf_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "format/gguf_names.h"
#include "tokenizer/llama_pre_tokenizers.h"
#include "tokenizer/vocab.h"

namespace pagoda {
namespace {

using format::GgufValue;

// tokenizer.ggml.pre, under llama.cpp's names: a vocabulary read from a GGUF keeps its name; a tokenizer.json's
// split regex names the family whose reading back (vocab_loader.cc) gives the same flags.
Result<std::string> pre_name(const BpeVocab& v, std::string_view source) {
  if (!v.pre_name.empty()) return v.pre_name;
  if (v.split_regexes.size() == 1 && v.regex_dialect == RegexDialect::kOniguruma) {
    const std::string_view name = llama_pre_name_for_hf_split(v.split_regexes[0], v.nfc, v.ignore_merges);
    if (!name.empty()) return std::string(name);
  }
  std::string regexes;
  for (const std::string& regex : v.split_regexes) regexes += (regexes.empty() ? "" : " then ") + regex;
  return make_error(fmt::format(
      "{}: the pre-tokenizer (split regexes {}, NFC {}, ignore_merges {}) has no tokenizer.ggml.pre name in GGUF "
      "(supported from tokenizer.json: the GPT-2, Llama 3, Qwen2, Qwen3.5, tekken and GPT-4o splits)",
      source, regexes, v.nfc, v.ignore_merges));
}

}  // namespace

Status add_bpe_vocabulary(const BpeVocab& vocab, int32_t vocab_size, format::GgufWriter& w, std::string_view source) {
  size_t num_tokens = vocab.tokens.size();
  for (const AddedToken& added : vocab.added) num_tokens = std::max(num_tokens, size_t(added.id) + 1);
  if (vocab_size <= 0 || num_tokens > size_t(vocab_size)) {
    return make_error(fmt::format("{}: the tokenizer has {} tokens but the model's vocab_size is {}", source,
                                  num_tokens, vocab_size));
  }
  PAGODA_ASSIGN_OR_RETURN(const std::string pre, pre_name(vocab, source));
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<int32_t> types(static_cast<size_t>(vocab_size), int32_t(TokenType::kNormal));
  for (size_t id = 0; id < vocab.tokens.size(); ++id) tokens[id] = vocab.tokens[id];
  for (const AddedToken& added : vocab.added) {
    tokens[size_t(added.id)] = added.content;
    types[size_t(added.id)] = int32_t(added.special ? TokenType::kControl : TokenType::kUserDefined);
  }
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (!tokens[id].empty()) continue;
    tokens[id] = fmt::format("[PAD{}]", id);
    types[id] = int32_t(TokenType::kUnused);
  }
  std::vector<std::string> merges;
  merges.reserve(vocab.merges.size());
  for (const auto& [left, right] : vocab.merges) merges.push_back(left + " " + right);
  w.set(format::gguf_key::kTokenizerModel, GgufValue::string("gpt2"));
  w.set(format::gguf_key::kTokenizerPre, GgufValue::string(pre));
  w.set(format::gguf_key::kTokens, GgufValue::string_array(tokens));
  w.set(format::gguf_key::kTokenType, GgufValue::i32_array(types));
  w.set(format::gguf_key::kMerges, GgufValue::string_array(merges));
  if (vocab.bos_id >= 0) w.set(format::gguf_key::kBosId, GgufValue::u32(uint32_t(vocab.bos_id)));
  if (vocab.eos_id >= 0) w.set(format::gguf_key::kEosId, GgufValue::u32(uint32_t(vocab.eos_id)));
  // GGUF holds two stop ids besides EOS; the readers find the other end-of-turn tokens by their text.
  const char* stop_keys[] = {format::gguf_key::kEotId, format::gguf_key::kEomId};
  for (size_t i = 0; i < vocab.stop_ids.size() && i < 2; ++i) {
    w.set(stop_keys[i], GgufValue::u32(uint32_t(vocab.stop_ids[i])));
  }
  if (vocab.add_bos_set) w.set(format::gguf_key::kAddBos, GgufValue::boolean(vocab.add_bos));
  if (vocab.add_eos) w.set(format::gguf_key::kAddEos, GgufValue::boolean(true));
  return Status::ok_status();
}

}  // namespace pagoda
