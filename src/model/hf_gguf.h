// The GGUF view of an HF checkpoint: llama.cpp's metadata keys for its architecture (llama / qwen2 / qwen3)
// plus tokenizer keys, and the converter that writes them with the tensors (`pagoda convert --from hf`). The
// loader uses the same metadata for `-m DIR`, so a folder and its converted GGUF are the same model.
#pragma once

#include <pagoda/status.h>

#include <string>

#include "format/gguf_writer.h"
#include "model/hf_checkpoint.h"

namespace pagoda {

struct HfGgufMetadata {
  format::GgufWriter writer;  // metadata only; the converter adds the tensors
  // Non-empty when the tokenizer keys are a placeholder (why, for a warning on stderr).
  std::string tokenizer_note;
};

// `name`: general.name (default: the folder's name). `chat_template`: tokenizer.chat_template when non-empty.
HfGgufMetadata hf_gguf_metadata(const HfCheckpoint& checkpoint, const std::string& name = "",
                                const std::string& chat_template = "");

struct HfConvertResult {
  std::string tokenizer_note;
};
// Writes `output` with every tensor of the checkpoint in GGUF names and order; matrices keep their dtype
// (F32/F16/BF16), 1-D tensors are written as F32, as llama.cpp's converter does.
Result<HfConvertResult> convert_hf_to_gguf(const HfCheckpoint& checkpoint, const std::string& output,
                                           const std::string& name = "", const std::string& chat_template = "");

}  // namespace pagoda
