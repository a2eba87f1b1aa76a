// llama2.c -> GGUF: metadata keys and token types as llama.cpp writes them for SentencePiece Llama models.
#include "format/llama2c_converter.h"

#include <fmt/format.h>

#include <filesystem>

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
  w.set("general.architecture", GgufValue::string("llama"));
  w.set("general.name", GgufValue::string(name));
  if (!options.chat_template.empty()) w.set("tokenizer.chat_template", GgufValue::string(options.chat_template));
  w.set("general.alignment", GgufValue::u32(32));
  w.set("llama.context_length", GgufValue::u32(uint32_t(c.seq_len)));
  w.set("llama.embedding_length", GgufValue::u32(uint32_t(c.dim)));
  w.set("llama.block_count", GgufValue::u32(uint32_t(c.num_layers)));
  w.set("llama.feed_forward_length", GgufValue::u32(uint32_t(c.hidden_dim)));
  w.set("llama.rope.dimension_count", GgufValue::u32(uint32_t(c.dim / c.num_heads)));
  w.set("llama.attention.head_count", GgufValue::u32(uint32_t(c.num_heads)));
  w.set("llama.attention.head_count_kv", GgufValue::u32(uint32_t(c.num_kv_heads)));
  w.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  w.set("llama.rope.freq_base", GgufValue::f32(10000.0f));
  w.set("llama.vocab_size", GgufValue::u32(uint32_t(c.vocab_size)));
  w.set("general.file_type", GgufValue::u32(0));  // all F32
  w.set("tokenizer.ggml.model", GgufValue::string("llama"));
  w.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
  w.set("tokenizer.ggml.scores", GgufValue::f32_array(vocab.scores));
  w.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  w.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
  w.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  for (const Llama2cTensor& t : ckpt.tensors)
    w.add_tensor(t.name, GgmlType::kF32, t.dims, t.data, t.num_elements * sizeof(float));
  return w.write(options.output_path);
}

}  // namespace pagoda::format
