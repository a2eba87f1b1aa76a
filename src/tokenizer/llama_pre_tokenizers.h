// The pre-tokenizers llama.cpp knows by their GGUF tokenizer.ggml.pre names: for each name, its split regexes
// (llama.cpp's, in order, ECMAScript dialect) and the flags that name implies. Owns only this constant table;
// reading the GGUF keys is vocab_loader.cc's job.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace pagoda {

struct LlamaPreTokenizer {
  std::string_view name;                   // tokenizer.ggml.pre
  std::span<const std::string_view> regexes;  // applied in order, each splitting the pieces of the previous
  bool ignore_merges = false;              // a whole piece that is a token is taken as is
  bool add_bos = false;                    // BOS when tokenizer.ggml.add_bos_token is absent
  bool nfc = false;  // NFC-normalize first (Qwen2 tokenizer.json files do; llama.cpp itself does not)
  bool byte_level = true;    // false: UTF-8 tokens with U+2581 spaces and <0xNN> bytes (Gemma 4)
  bool bos_always = false;   // BOS even when tokenizer.ggml.add_bos_token says false (llama.cpp's Gemma 4 override)
};

// The entry named `name`, or nullptr when llama.cpp has no such name or pagoda does not run it.
const LlamaPreTokenizer* find_llama_pre_tokenizer(std::string_view name);
// What a vocabulary without tokenizer.ggml.pre gets (llama.cpp's "default", with a warning).
const LlamaPreTokenizer& default_llama_pre_tokenizer();
// The name llama.cpp gives a tokenizer.json whose one Split regex is `regex` (as the file writes it) with these
// flags, or "" when pagoda knows none: GPT-2, Llama 3, Qwen2, Qwen3.5, tekken and GPT-4o's.
std::string_view llama_pre_name_for_hf_split(std::string_view regex, bool nfc, bool ignore_merges);
// Every supported name, comma-separated (for error messages).
std::string supported_llama_pre_tokenizer_names();

}  // namespace pagoda
