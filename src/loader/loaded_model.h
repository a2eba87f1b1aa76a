// LoadedModel: a GGUF file (or an HF model folder) with the Model and Tokenizer built from it, kept together because
// both borrow the file's mapping. Owns all three; moving it keeps every borrowed pointer valid.
#pragma once

#include <pagoda/status.h>

#include <memory>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "model/hf_checkpoint.h"
#include "model/model.h"
#include "model/model_options.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

struct LoadedModel {
  std::string source;  // the path, or "bundled:stories260K"
  // An HF folder's tensors (null for a GGUF); `file` then holds only the GGUF metadata the converter would write
  // (in `metadata_bytes`), so the tokenizer and the server read a folder as they read its converted GGUF.
  std::unique_ptr<HfCheckpoint> checkpoint;
  std::vector<uint8_t> metadata_bytes;
  std::unique_ptr<format::GgufFile> file;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  // Set when the weights were quantized at load (what, to which type, sizes, time), or when tensors of a type no
  // kernel runs as stored were converted (model/tensor_set.h says how).
  std::string weights_note;
};

// `path` empty = the bundled model; a directory with config.json = an HF model folder. Errors are one line naming the
// file and the problem.
Result<LoadedModel> load_model(const std::string& path, const kernels::KernelTable& kernels,
                               const ModelOptions& options = {});

}  // namespace pagoda
