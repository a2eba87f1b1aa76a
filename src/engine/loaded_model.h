// LoadedModel: a GGUF file with the Model and Tokenizer built from it, kept together because both borrow the
// file's mapping. Owns all three; moving it keeps every borrowed pointer valid.
#pragma once

#include <pagoda/status.h>

#include <memory>
#include <string>

#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/model_options.h"
#include "tokenizer/tokenizer.h"

namespace pagoda {

struct LoadedModel {
  std::string source;  // the path, or "bundled:stories260K"
  std::unique_ptr<format::GgufFile> file;
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// `path` empty = the bundled model. Errors are one line naming the file and the problem.
Result<LoadedModel> load_model(const std::string& path, const kernels::KernelTable& kernels,
                               const ModelOptions& options = {});

}  // namespace pagoda
