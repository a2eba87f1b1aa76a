// create_model: architecture name (GGUF general.architecture) -> the Model that runs it. The one place that
// knows which architectures exist; an unknown one is a clear error listing the supported names.
#pragma once

#include <pagoda/status.h>

#include <memory>

#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "model/model_options.h"
#include "model/tensor_set.h"

namespace pagoda {

// The returned model borrows tensor data from `file`, which must outlive it.
Result<std::unique_ptr<Model>> create_model(const format::GgufFile& file, const kernels::KernelTable& kernels,
                                            const ModelOptions& options = {});
// From tensors already found (an HF folder's, mapped to GGUF names); they must outlive the model.
Result<std::unique_ptr<Model>> create_model(ModelConfig config, const TensorSet& tensors,
                                            const kernels::KernelTable& kernels, const ModelOptions& options = {});
// general.architecture values pagoda runs.
bool architecture_is_supported(const std::string& arch);

}  // namespace pagoda
