// load_model_quantized: a model whose weights are stored in float (f32, f16 or bf16: a GGUF, an HF folder or the
// bundled model) loaded with its matrices quantized to q8_0, q4_0, int8 or awq-int4 first: the config's
// `quantization` key (vLLM's --quantization, mistral.rs's in-situ quantization). The quantized GGUF is written to a
// temporary file (TMPDIR) that is mapped and unlinked at once: it costs disk space while the process runs, no
// second load path. AWQ needs its calibration statistics from a model run, which the caller supplies.
#pragma once

#include <pagoda/status.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "format/gguf_quantizer.h"
#include "loader/loaded_model.h"

namespace pagoda {

// The config's `quantization` value as a weight type; nullopt for "none" (weights as stored). Errors: any other
// name, or awq-int4 with a group that is not 32, 64 or 128.
Result<std::optional<format::GgmlType>> weight_quantization_type(std::string_view name, int32_t awq_group = 128);

struct LoadQuantization {
  format::GgmlType type = format::GgmlType::kQ8_0;
  // awq-int4 only: the input statistics of the float model's linear layers (it gets the float GGUF's path).
  std::function<Result<format::CalibrationStats>(const std::string& float_gguf_path)> calibrate;
};

// `path` as load_model takes it. LoadedModel::source stays `path`; `weights_note` says what was quantized (a model
// already stored in `type` loads as it is). Errors: those of load_model, a model quantized into another type, a
// failed temporary write.
// Errors: those of load_model, a model that is already quantized, or a failed temporary write.
Result<LoadedModel> load_model_quantized(const std::string& path, const LoadQuantization& quantization,
                                         const kernels::KernelTable& kernels, const ModelOptions& options = {});

}  // namespace pagoda
