// tokenizer_from_hf_json: reads a Hugging Face tokenizer.json (byte-level BPE: GPT-2, Llama 3, Qwen2/3 style)
// into a BpeVocab and builds the BpeTokenizer (a WordPiece file: tokenizer_from_hf_json below). Every unsupported or
// malformed field is an error naming the file and the field ("tokenizer.json: model.type is 'Unigram'; only 'BPE'
// is supported").
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "pagoda/status.h"
#include "tokenizer/bpe_vocab.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

// Parses the JSON text of a tokenizer.json; `name` prefixes errors. `config_json` is the text of the
// tokenizer_config.json beside it, or "" (it only supplies the EOS and, with add_bos_token, BOS tokens);
// `generation_config_json` that of generation_config.json, or "" (its eos_token_id list: the stop tokens).
Result<BpeVocab> bpe_vocab_from_hf_json(std::string_view json_text, std::string_view name,
                                        std::string_view config_json = "",
                                        std::string_view generation_config_json = "");
// Reads `path` (and the tokenizer_config.json and generation_config.json in the same folder, when there are); a
// WordPiece model.type is read by hf_wordpiece_loader.h into a WordPieceTokenizer instead.
Result<std::unique_ptr<Tokenizer>> tokenizer_from_hf_json(const std::string& path);

}  // namespace pagoda
