// Opens a GGUF (or the embedded one) and builds its model and tokenizer, checking they agree.
#include "engine/loaded_model.h"

#include <fmt/format.h>

#include "assets/bundled_model.h"
#include "model/registry.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {

Result<LoadedModel> load_model(const std::string& path, const kernels::KernelTable& kernels,
                               const ModelOptions& options) {
  LoadedModel loaded;
  if (path.empty()) {
    loaded.source = fmt::format("bundled:{}", kBundledModelName);
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::from_memory(bundled_model_gguf(), loaded.source));
    loaded.file = std::make_unique<format::GgufFile>(std::move(f));
  } else {
    loaded.source = path;
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::open(path));
    loaded.file = std::make_unique<format::GgufFile>(std::move(f));
  }
  PAGODA_ASSIGN_OR_RETURN(loaded.model, create_model(*loaded.file, kernels, options));
  PAGODA_ASSIGN_OR_RETURN(loaded.tokenizer, tokenizer_from_gguf(*loaded.file));
  if (loaded.tokenizer->vocab_size() != loaded.model->config().vocab_size)
    return make_error(fmt::format("{}: the tokenizer has {} tokens but token_embd.weight has {} rows", loaded.source,
                                  loaded.tokenizer->vocab_size(), loaded.model->config().vocab_size));
  return loaded;
}

}  // namespace pagoda
