// The AWQ calibration pass: load, record every linear layer's inputs over the text, name them by tensor.
#include "eval/awq_calibration.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "assets/calibration_text.h"
#include "eval/calibration_pass.h"
#include "eval/linear_input_recorder.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"

namespace pagoda::eval {

Result<format::CalibrationStats> collect_awq_calibration(const std::string& gguf_path, const AwqCalibrationOptions& o) {
  LinearInputRecorder recorder;
  ModelOptions model_options;
  model_options.linear_observer = &recorder;
  model_options.repack_weights = false;  // the recorder names weights by their pointers into the file's mapping
  PAGODA_ASSIGN_OR_RETURN(LoadedModel loaded, load_model(gguf_path, kernels::best_kernels(), model_options));
  const std::vector<TokenId> tokens = loaded.tokenizer->encode(o.text, true);
  const int32_t ctx = std::min(o.chunk_tokens, loaded.model->config().context_length);
  PAGODA_ASSIGN_OR_RETURN(CalibrationPassReport pass, run_calibration_pass(*loaded.model, tokens,
                                                                            loaded.tokenizer->bos_id(), o.num_threads,
                                                                            ctx));
  format::CalibrationStats stats = recorder.stats_by_name(*loaded.file);
  std::fprintf(stderr, "pagoda: calibration over %s: %lld tokens in %d chunks of up to %d, %zu weights observed\n",
               o.text_name.c_str(), static_cast<long long>(pass.num_tokens), pass.num_chunks, ctx, stats.size());
  return stats;
}

LoadQuantization builtin_load_quantization(format::GgmlType type, int32_t num_threads) {
  LoadQuantization q;
  q.type = type;
  if (type == format::GgmlType::kPagodaAwqInt4G32 || type == format::GgmlType::kPagodaAwqInt4G64 ||
      type == format::GgmlType::kPagodaAwqInt4G128)
    q.calibrate = [num_threads](const std::string& float_gguf) {
      return collect_awq_calibration(float_gguf, {.text = std::string(default_calibration_text()),
                                                  .text_name = "the built-in text",
                                                  .num_threads = num_threads});
    };
  return q;
}

}  // namespace pagoda::eval
