// The activation-aware half of AWQ (Lin et al., 2023): for one linear layer y = W x, a per-input-channel scale
// s = mean|x|^alpha (normalized) is chosen by a grid search over alpha in [0, 1] that minimizes the output MSE
// of the quantized layer on calibration activations. The layer is then stored as Q(W diag(s)) with s^-1 applied
// to x at run time, so channels that carry large activations get finer weight steps. alpha = 0 is s = 1, plain
// group quantization, so the search never does worse than that on the calibration rows.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::quant {

// What calibration saw at one linear layer's input.
struct LinearInputStats {
  int64_t num_in = 0;
  int64_t num_rows_seen = 0;    // token rows mean_abs averages over
  std::vector<float> mean_abs;  // f32 [num_in]: mean |x| per input channel
  std::vector<float> samples;   // f32 [num_samples, num_in]: a sample of the rows, for the output MSE
  int64_t num_samples() const { return num_in == 0 ? 0 : int64_t(samples.size()) / num_in; }
};

struct AwqScales {
  float alpha = 0.0f;
  std::vector<float> scales;  // s, f32 [num_in]; the stored weights are W diag(s)
  double mse = 0.0;           // mean squared output error per element at the chosen alpha
  double mse_unscaled = 0.0;  // the same at alpha = 0 (s = 1)
};

// w: f32 [num_out, num_in] row-major; stats.num_in == num_in and at least one sample. `group` is the AWQ INT4
// group size the weights will be quantized with (32, 64 or 128, dividing num_in). Tries alpha = k / num_grid
// for k = 0..num_grid; ties keep the smaller alpha. Cost: (num_grid + 1) quantizations of W and products of
// the samples with the quantization error, O(num_grid * num_samples * num_out * num_in).
AwqScales search_awq_scales(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                            const LinearInputStats& stats, int32_t num_grid = 20);

// AWQ's clipping search, run after the scales: for each row and group of W diag(s), the clip ratio r in
// {1, 1 - 1/num_grid, ..., 1 - max_shrink} whose group, clamped to r times its range and quantized, gives the
// smallest output error sum_n (x_n diag(s)^-1 . (group - dequantized group))^2 on the calibration samples. r = 1
// is a candidate, so clipping never does worse on them. Returns the values to quantize: W diag(s) with every
// group clamped, f32 [num_out, num_in]; *mse (if not null) gets the output MSE of the result, as in AwqScales.
std::vector<float> clip_awq_groups(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                                   const std::vector<float>& scales, const LinearInputStats& stats,
                                   double* mse = nullptr, int32_t num_grid = 20, float max_shrink = 0.5f);

// The effective f32 weights of a candidate: dequantize(quantize(W diag(s))) diag(s)^-1, f32 [num_out, num_in].
std::vector<float> awq_effective_weights(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                                         const std::vector<float>& scales);

}  // namespace pagoda::quant
