// hf_folder_metadata: the whole GGUF metadata of a Hugging Face model folder, as `pagoda convert --from hf` writes
// it and `-m DIR` reads it (so a folder and its converted GGUF are one model): the model keys (model/hf_gguf), the
// tokenizer (tokenizer.json with tokenizer_config.json and generation_config.json, as GGUF byte-level BPE keys;
// a placeholder vocabulary, with a note, when the folder has no tokenizer.json), the chat template
// (chat_template.jinja or tokenizer_config.json's chat_template), and an embedding model's pooling
// (sentence-transformers' modules.json and pooling config, as llama.cpp's `<arch>.pooling_type`) and Matryoshka
// sizes (config.json's is_matryoshka / matryoshka_dimensions, as pagoda.embedding.* keys). Reads files; writes
// nothing to disk.
#pragma once

#include <pagoda/status.h>

#include <string>

#include "format/gguf_writer.h"
#include "model/hf_checkpoint.h"

namespace pagoda {

struct HfFolderMetadata {
  format::GgufWriter writer;
  std::string tokenizer_note;  // non-empty when the tokenizer keys are a placeholder (why, for a warning)
};

// `name`: general.name (default: the folder's name); `chat_template`: used instead of the folder's when non-empty.
Result<HfFolderMetadata> hf_folder_metadata(const HfCheckpoint& checkpoint, const std::string& name = "",
                                            const std::string& chat_template = "");

// `pagoda convert --from hf`: the folder's metadata and tensors written to `output`; returns the tokenizer note.
Result<std::string> convert_hf_folder(const HfCheckpoint& checkpoint, const std::string& output,
                                      const std::string& name = "", const std::string& chat_template = "");

}  // namespace pagoda
