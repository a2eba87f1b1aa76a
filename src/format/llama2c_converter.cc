// llama2.c -> GGUF: metadata keys and token types as llama.cpp writes them for SentencePiece Llama models.
#include "format/llama2c_converter.h"

#include <fmt/format.h>

#include <filesystem>

#include "format/gguf_names.h"
#include "format/gguf_writer.h"
#include "format/llama2c_reader.h"

namespace pagoda::format {
namespace {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
constexpr int32_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeByte = 6;

bool is_byte_piece(const std::string& p) {
  auto hex = [](char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'F'); };
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && hex(p[3]) && hex(p[4]) && p[5] == '>';
}

// llama2.c's export writes SentencePiece's U+2581 as a plain space; GGUF keeps U+2581.
std::string to_sentencepiece(const std::string& piece) {
  std::string out;
  for (char ch : piece) {
    if (ch == ' ')
      out += "\xE2\x96\x81";
    else
      out += ch;
  }
  return out;
}

}  // namespace

Status convert_llama2c_to_gguf(const Llama2cConvertOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(Llama2cCheckpoint ckpt, read_llama2c_checkpoint(options.checkpoint_path));
  const Llama2cConfig& c = ckpt.config;
  PAGODA_ASSIGN_OR_RETURN(Llama2cVocab vocab, read_llama2c_vocab(options.tokenizer_path, c.vocab_size));
  if (c.vocab_size < 3)
    return make_error(fmt::format("{}: vocabulary of {} tokens has no BOS/EOS", options.tokenizer_path, c.vocab_size));

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  tokens.reserve(vocab.pieces.size());
  for (size_t i = 0; i < vocab.pieces.size(); ++i) {
    const std::string& p = vocab.pieces[i];
    // llama2.c's sentencepiece export wraps BOS/EOS as "\n<s>\n" / "\n</s>\n"; llama.cpp's names are bare.
    if (i == 0) {
      tokens.push_back("<unk>");
      types.push_back(kTypeUnknown);
    } else if (i == 1 || i == 2) {
      tokens.push_back(i == 1 ? "<s>" : "</s>");
      types.push_back(kTypeControl);
    } else if (is_byte_piece(p)) {
      tokens.push_back(p);
      types.push_back(kTypeByte);
    } else {
      tokens.push_back(to_sentencepiece(p));
      types.push_back(kTypeNormal);
    }
  }

  const std::string name =
      options.model_name.empty() ? std::filesystem::path(options.checkpoint_path).stem().string() : options.model_name;
  GgufWriter w;
  w.set(gguf_key::kArchitecture, GgufValue::string("llama"));
  w.set(gguf_key::kName, GgufValue::string(name));
  if (!options.chat_template.empty()) w.set(gguf_key::kChatTemplate, GgufValue::string(options.chat_template));
  w.set(gguf_key::kAlignment, GgufValue::u32(32));
  w.set(gguf_key::arch_key("llama", gguf_key::kContextLength), GgufValue::u32(uint32_t(c.seq_len)));
  w.set(gguf_key::arch_key("llama", gguf_key::kEmbeddingLength), GgufValue::u32(uint32_t(c.dim)));
  w.set(gguf_key::arch_key("llama", gguf_key::kBlockCount), GgufValue::u32(uint32_t(c.num_layers)));
  w.set(gguf_key::arch_key("llama", gguf_key::kFeedForwardLength), GgufValue::u32(uint32_t(c.hidden_dim)));
  w.set(gguf_key::arch_key("llama", gguf_key::kRopeDimensionCount), GgufValue::u32(uint32_t(c.dim / c.num_heads)));
  w.set(gguf_key::arch_key("llama", gguf_key::kHeadCount), GgufValue::u32(uint32_t(c.num_heads)));
  w.set(gguf_key::arch_key("llama", gguf_key::kHeadCountKv), GgufValue::u32(uint32_t(c.num_kv_heads)));
  w.set(gguf_key::arch_key("llama", gguf_key::kRmsEpsilon), GgufValue::f32(1e-5f));
  w.set(gguf_key::arch_key("llama", gguf_key::kRopeFreqBase), GgufValue::f32(10000.0f));
  w.set(gguf_key::arch_key("llama", gguf_key::kVocabSize), GgufValue::u32(uint32_t(c.vocab_size)));
  w.set(gguf_key::kFileType, GgufValue::u32(0));  // all F32
  w.set(gguf_key::kTokenizerModel, GgufValue::string("llama"));
  w.set(gguf_key::kTokens, GgufValue::string_array(tokens));
  w.set(gguf_key::kScores, GgufValue::f32_array(vocab.scores));
  w.set(gguf_key::kTokenType, GgufValue::i32_array(types));
  w.set(gguf_key::kBosId, GgufValue::u32(1));
  w.set(gguf_key::kEosId, GgufValue::u32(2));
  w.set(gguf_key::kUnknownId, GgufValue::u32(0));
  w.set(gguf_key::kAddBos, GgufValue::boolean(true));
  w.set(gguf_key::kAddEos, GgufValue::boolean(false));
  for (const Llama2cTensor& t : ckpt.tensors)
    w.add_tensor(t.name, GgmlType::kF32, t.dims, t.data, t.num_elements * sizeof(float));
  return w.write(options.output_path);
}

}  // namespace pagoda::format
