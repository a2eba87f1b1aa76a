// LinearInputRecorder: the LinearObserver of AWQ calibration. For every weight the forward pass multiplies it
// accumulates the mean |x| per input channel over every row it sees, and keeps a uniform sample (reservoir
// sampling with a fixed seed, so a run is reproducible) of up to max_samples rows for the scale search's output
// MSE. Weights are told apart by their data pointer, which points into the model's GGUF mapping (the model must be
// loaded with ModelOptions::repack_weights off), so the statistics can be named by that file's tensors afterwards.
#pragma once

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "format/gguf_quantizer.h"
#include "format/gguf_reader.h"
#include "model/linear_observer.h"

namespace pagoda::eval {

class LinearInputRecorder final : public LinearObserver {
 public:
  explicit LinearInputRecorder(int64_t max_samples = 256) : max_samples_(max_samples) {}

  void observe(const WeightView& w, const float* x, int32_t num_tokens) override;

  // The statistics of every observed weight that is a tensor of `file`, by tensor name.
  format::CalibrationStats stats_by_name(const format::GgufFile& file) const;
  int64_t num_weights_seen() const { return int64_t(by_weight_.size()); }

 private:
  struct Accumulator {
    int64_t num_in = 0;
    int64_t num_rows_seen = 0;
    std::vector<double> sum_abs;  // [num_in]
    std::vector<float> samples;   // f32 [<= max_samples, num_in]
  };
  int64_t max_samples_;
  std::mt19937_64 rng_{20231001};
  std::unordered_map<const void*, Accumulator> by_weight_;
};

}  // namespace pagoda::eval
