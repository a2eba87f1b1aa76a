// Converts a llama2.c checkpoint and tokenizer.bin into a GGUF that follows llama.cpp's conventions for the
// `llama` architecture (tensor names, llama.* hyper-parameters, tokenizer.ggml.* vocabulary), so the file
// loads unchanged in llama.cpp. llama2.c already rotates adjacent pairs (i, i+1) in RoPE, which is what
// llama.cpp's `llama` rope type does, so Q/K rows are written as they are (no permutation).
#pragma once

#include <pagoda/status.h>

#include <string>

namespace pagoda::format {

struct Llama2cConvertOptions {
  std::string checkpoint_path;
  std::string tokenizer_path;
  std::string output_path;
  std::string model_name;     // general.name; default: the checkpoint's file stem
  std::string chat_template;  // tokenizer.chat_template (Jinja); empty: none (llama2.c models have none)
};

Status convert_llama2c_to_gguf(const Llama2cConvertOptions& options);

}  // namespace pagoda::format
