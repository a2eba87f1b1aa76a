// prepare_ablation_models: the three weight files the ablation's rows load, derived from one model: the input
// as it is (its 2-D weights must be f32, f16 or bf16: the baseline), and Q8_0 and Q4_0 copies written by the
// same quantizer as `pagoda quantize` into a scratch folder (the bundled model is first written there as a
// file). Owns the scratch folder: the destructor removes it.
#pragma once

#include <pagoda/status.h>

#include <string>

#include "bench/ablation_plan.h"
#include "model/model_config.h"

namespace pagoda::bench {

class AblationModelFiles {
 public:
  // `model_path` empty = the bundled model. `scratch_dir` must not exist yet (it is created and later removed).
  static Result<AblationModelFiles> prepare(const std::string& model_path, const std::string& scratch_dir);
  ~AblationModelFiles();
  AblationModelFiles(AblationModelFiles&& other) noexcept;
  AblationModelFiles& operator=(AblationModelFiles&&) = delete;
  AblationModelFiles(const AblationModelFiles&) = delete;

  const std::string& path(AblationWeights weights) const;
  // The type of the input's matmul weights ("f32", "f16", "bf16"): what the baseline row really runs.
  const std::string& baseline_type() const { return baseline_type_; }
  // The model's hyper-parameters (the same in all three files).
  const ModelConfig& model_config() const { return model_config_; }

 private:
  AblationModelFiles() = default;
  std::string scratch_dir_;  // empty once moved from
  std::string f32_path_, q8_0_path_, q4_0_path_;
  std::string baseline_type_;
  ModelConfig model_config_;
};

}  // namespace pagoda::bench
