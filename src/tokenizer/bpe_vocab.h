// BpeVocab: everything a byte-level BPE tokenizer needs, as a plain value: the byte-level spelled tokens,
// the merges in rank order, the added (special) tokens, the split regex and the BOS/EOS roles. Filled by the
// tokenizer.json loader (hf_tokenizer_loader.h) or from GGUF tokenizer.ggml.* (vocab_loader.h).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/types.h"
#include "tokenizer/pretokenizer.h"

namespace pagoda {

// A token matched in the raw text before pre-tokenization (HF "added_tokens").
struct AddedToken {
  TokenId id = -1;
  std::string content;  // the literal text, not byte-level spelled
  bool special = true;  // control token: decodes to "" and is_control
  bool lstrip = false;  // swallows the whitespace before it
  bool rstrip = false;  // swallows the whitespace after it
};

// Special tokens that end a chat turn in the families pagoda reads (as llama.cpp also detects them by text).
inline constexpr const char* kEndOfTurnTexts[] = {"<|eot_id|>",    "<|eom_id|>",    "<|im_end|>",     "<|end|>",
                                                  "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>"};

struct BpeVocab {
  std::vector<std::string> tokens;  // [id] byte-level spelling ("Ġthe"); "" for ids only an added token has
  std::vector<std::pair<std::string, std::string>> merges;  // rank order: merges[0] applies first
  std::vector<AddedToken> added;
  // The pre-tokenizer: regexes applied in order (one from a tokenizer.json; llama.cpp's list for a GGUF name).
  std::vector<std::string> split_regexes{std::string(kGpt2SplitRegex)};
  RegexDialect regex_dialect = RegexDialect::kOniguruma;
  std::string pre_name;        // the llama.cpp tokenizer.ggml.pre it was read under; "" from a tokenizer.json
  bool nfc = false;            // NFC-normalize text outside added tokens (Qwen2's normalizer)
  bool ignore_merges = false;  // a whole piece that is a token is taken as is (Llama 3)
  // false: tokens are UTF-8 text with spaces spelled U+2581 and <0xNN> byte tokens, merged from characters
  // (llama.cpp's Gemma 4 BPE), instead of GPT-2's byte-level spelling.
  bool byte_level = true;
  TokenId bos_id = -1;
  TokenId eos_id = -1;
  bool add_bos = false;  // the post-processor prepends BOS
  // add_bos came from the file (a TemplateProcessing, add_bos_token) rather than a default. A GGUF written from
  // a vocabulary without it leaves tokenizer.ggml.add_bos_token out, so the reader's default applies: llama.cpp's,
  // BOS for llama-bpe (Llama 3 tokenizer.json files without a TemplateProcessing still want it).
  bool add_bos_set = false;
  // The post-processor appends EOS after the text (a TemplateProcessing's trailing special token, as
  // Qwen3-Embedding's tokenizer.json has): written as tokenizer.ggml.add_eos_token, which the embeddings read.
  // Encoding itself never appends it (a generation prompt must not end with EOS).
  bool add_eos = false;
  // Tokens besides EOS that end generation: generation_config.json's eos_token_id list, GGUF's eot/eom ids.
  // BpeTokenizer::create adds the special tokens spelled as a known end of turn (kEndOfTurnTexts).
  std::vector<TokenId> stop_ids;
};

}  // namespace pagoda
