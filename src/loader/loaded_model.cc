// Opens a GGUF (or the embedded one) and builds its model and tokenizer, checking they agree.
#include "loader/loaded_model.h"

#include <fmt/format.h>

#include <cstdio>

#include "assets/bundled_model.h"
#include "loader/hf_folder_metadata.h"
#include "model/registry.h"
#include "model/tensor_set.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda {

Result<LoadedModel> load_model(const std::string& path, const kernels::KernelTable& kernels,
                               const ModelOptions& options) {
  LoadedModel loaded;
  if (is_hf_model_folder(path)) {
    loaded.source = path;
    PAGODA_ASSIGN_OR_RETURN(loaded.checkpoint, HfCheckpoint::open(path));
    if (!loaded.checkpoint->note().empty()) std::fprintf(stderr, "pagoda: note: %s\n", loaded.checkpoint->note().c_str());
    PAGODA_ASSIGN_OR_RETURN(HfFolderMetadata metadata, hf_folder_metadata(*loaded.checkpoint));
    if (!metadata.tokenizer_note.empty())
      std::fprintf(stderr, "pagoda: warning: %s\n", metadata.tokenizer_note.c_str());
    loaded.metadata_bytes = metadata.writer.to_bytes();
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::from_memory(loaded.metadata_bytes, path));
    loaded.file = std::make_unique<format::GgufFile>(std::move(f));
    PAGODA_ASSIGN_OR_RETURN(loaded.model,
                            create_model(loaded.checkpoint->config(), loaded.checkpoint->tensors(), kernels, options));
  } else if (path.empty()) {
    loaded.source = fmt::format("bundled:{}", kBundledModelName);
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::from_memory(bundled_model_gguf(), loaded.source));
    loaded.file = std::make_unique<format::GgufFile>(std::move(f));
  } else {
    loaded.source = path;
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::open(path));
    loaded.file = std::make_unique<format::GgufFile>(std::move(f));
  }
  if (loaded.model == nullptr) {
    PAGODA_ASSIGN_OR_RETURN(loaded.model, create_model(*loaded.file, kernels, options));
    loaded.weights_note = tensor_conversion_note(*loaded.file);
  }
  PAGODA_ASSIGN_OR_RETURN(loaded.tokenizer, tokenizer_from_gguf(*loaded.file));
  if (loaded.tokenizer->vocab_size() != loaded.model->config().vocab_size)
    return make_error(fmt::format("{}: the tokenizer has {} tokens but token_embd.weight has {} rows", loaded.source,
                                  loaded.tokenizer->vocab_size(), loaded.model->config().vocab_size));
  return loaded;
}

}  // namespace pagoda
