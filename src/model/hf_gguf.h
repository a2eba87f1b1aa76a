// The GGUF view of an HF checkpoint's model: llama.cpp's metadata keys for its architecture (the common ones,
// then the family's own through its ArchitectureFamily) and the tensor writer behind `pagoda convert --from hf`. The
// tokenizer and chat-template keys are not the model's business: engine/hf_folder_metadata adds them from the folder's
// tokenizer files.
#pragma once

#include <pagoda/status.h>

#include <string>

#include "format/gguf_writer.h"
#include "model/hf_checkpoint.h"

namespace pagoda {

// The model keys (general.*, <arch>.*). `name`: general.name (default: the folder's name).
format::GgufWriter hf_gguf_metadata(const HfCheckpoint& checkpoint, const std::string& name = "");
// The same keys for a config alone (synth's GGUF families), general.file_type from `file_type`.
format::GgufWriter model_gguf_metadata(const ModelConfig& config, const std::string& name, format::GgmlType file_type);

// Adds every tensor of the checkpoint to `metadata` in GGUF names and order and writes `output`; matrices keep
// their dtype (F32/F16/BF16; gpt-oss's experts MXFP4), 1-D tensors are written as F32, as llama.cpp's converter does.
Status write_hf_gguf(const HfCheckpoint& checkpoint, format::GgufWriter& metadata, const std::string& output);

}  // namespace pagoda
