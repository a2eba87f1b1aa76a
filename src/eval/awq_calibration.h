// collect_awq_calibration: the input statistics of a float model's linear layers over a calibration text (the
// bundled default or the user's), which AWQ quantization searches its scales against. Loads the model itself
// (unrepacked: the recorder names weights by their pointers into the file's mapping) and runs it through the engine.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <string>

#include "format/gguf_quantizer.h"
#include "loader/quantize_on_load.h"

namespace pagoda::eval {

struct AwqCalibrationOptions {
  std::string text;          // the calibration text
  std::string text_name;     // for the report line ("the built-in text", a path)
  int32_t num_threads = 1;
  int32_t chunk_tokens = 256;  // tokens per chunk (at most the model's context)
};

// Prints one line to stderr: tokens, chunks and weights observed.
Result<format::CalibrationStats> collect_awq_calibration(const std::string& gguf_path, const AwqCalibrationOptions& o);

// The quantize-at-load request for `type` (a weight_quantization_type result): the AWQ types calibrated on the
// built-in text with `num_threads`, the others as they are. What the config key and the public API both ask for.
LoadQuantization builtin_load_quantization(format::GgmlType type, int32_t num_threads);

}  // namespace pagoda::eval
