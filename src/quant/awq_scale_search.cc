// AWQ scale grid search.
#include "quant/awq_scale_search.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "quant/block_awq_int4.h"

namespace pagoda::quant {
namespace {

// s = max(mean_abs, 1e-4)^alpha, divided by sqrt(max(s) * min(s)) so it is centred on 1 in log scale (as the
// reference implementation does): the weights' overall magnitude, and so the fp16 range of d, stays put.
std::vector<float> scales_for(const std::vector<float>& mean_abs, float alpha) {
  std::vector<float> s(mean_abs.size());
  float lo = INFINITY, hi = 0.0f;
  for (size_t i = 0; i < s.size(); ++i) {
    s[i] = std::pow(std::max(mean_abs[i], 1e-4f), alpha);
    lo = std::min(lo, s[i]);
    hi = std::max(hi, s[i]);
  }
  const float norm = std::sqrt(lo * hi);
  for (float& v : s) v /= norm;
  return s;
}

// Mean over samples and outputs of (x . (w - w_eff)[o])^2.
double output_mse(const float* w, const std::vector<float>& w_eff, int64_t num_out, int64_t num_in,
                  const LinearInputStats& stats) {
  std::vector<float> err(w_eff.size());
  for (size_t i = 0; i < err.size(); ++i) err[i] = w[i] - w_eff[i];
  const int64_t num_samples = stats.num_samples();
  double sum = 0.0;
  for (int64_t n = 0; n < num_samples; ++n) {
    const float* x = stats.samples.data() + n * num_in;
    for (int64_t o = 0; o < num_out; ++o) {
      const float* e = err.data() + o * num_in;
      double dot = 0.0;
      for (int64_t i = 0; i < num_in; ++i) dot += double(x[i]) * double(e[i]);
      sum += dot * dot;
    }
  }
  return sum / double(num_samples * num_out);
}

}  // namespace

std::vector<float> awq_effective_weights(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                                         const std::vector<float>& scales) {
  PAGODA_CHECK(int64_t(scales.size()) == num_in);
  std::vector<float> scaled(size_t(num_out * num_in));
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t i = 0; i < num_in; ++i) scaled[size_t(o * num_in + i)] = w[o * num_in + i] * scales[size_t(i)];
  std::vector<uint8_t> blocks(size_t(awq_int4_row_bytes(num_in, group)));
  for (int64_t o = 0; o < num_out; ++o) {
    float* row = scaled.data() + o * num_in;
    quantize_row_awq_int4(row, blocks.data(), num_in, group);
    dequantize_row_awq_int4(blocks.data(), row, num_in, group);
    for (int64_t i = 0; i < num_in; ++i) row[i] /= scales[size_t(i)];
  }
  return scaled;
}

std::vector<float> clip_awq_groups(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                                   const std::vector<float>& scales, const LinearInputStats& stats, double* mse,
                                   int32_t num_grid, float max_shrink) {
  PAGODA_CHECK(stats.num_in == num_in && int64_t(scales.size()) == num_in && stats.num_samples() > 0);
  PAGODA_CHECK(num_in % group == 0 && num_grid >= 1 && max_shrink >= 0.0f && max_shrink < 1.0f);
  const int64_t num_samples = stats.num_samples();
  // The kernel's input: x diag(s)^-1, f32 [num_samples, num_in].
  std::vector<float> x_scaled(stats.samples.size());
  for (int64_t n = 0; n < num_samples; ++n)
    for (int64_t i = 0; i < num_in; ++i)
      x_scaled[size_t(n * num_in + i)] = stats.samples[size_t(n * num_in + i)] / scales[size_t(i)];
  std::vector<float> out(size_t(num_out * num_in));
  for (int64_t o = 0; o < num_out; ++o)
    for (int64_t i = 0; i < num_in; ++i) out[size_t(o * num_in + i)] = w[o * num_in + i] * scales[size_t(i)];
  std::vector<float> clamped(static_cast<size_t>(group)), deq(static_cast<size_t>(group)), best(clamped.size());
  std::vector<uint8_t> block(static_cast<size_t>(awq_int4_row_bytes(group, group)));
  const int32_t num_candidates = int32_t(std::floor(max_shrink * float(num_grid) + 1e-4f)) + 1;
  for (int64_t o = 0; o < num_out; ++o) {
    for (int64_t g = 0; g < num_in / group; ++g) {
      float* values = out.data() + o * num_in + g * group;
      float lo = 0.0f, hi = 0.0f;
      for (int64_t j = 0; j < group; ++j) {
        lo = std::min(lo, values[j]);
        hi = std::max(hi, values[j]);
      }
      double best_err = INFINITY;
      for (int32_t k = 0; k < num_candidates; ++k) {
        const float r = 1.0f - float(k) / float(num_grid);
        for (int64_t j = 0; j < group; ++j) clamped[size_t(j)] = std::clamp(values[j], r * lo, r * hi);
        quantize_row_awq_int4(clamped.data(), block.data(), group, group);
        dequantize_row_awq_int4(block.data(), deq.data(), group, group);
        double err = 0.0;
        for (int64_t n = 0; n < num_samples; ++n) {
          const float* x = x_scaled.data() + n * num_in + g * group;
          double dot = 0.0;
          for (int64_t j = 0; j < group; ++j) dot += double(x[j]) * (double(values[j]) - double(deq[size_t(j)]));
          err += dot * dot;
        }
        if (err < best_err) {
          best_err = err;
          best = clamped;
        }
      }
      std::copy(best.begin(), best.end(), values);
    }
  }
  if (mse != nullptr) {
    // Effective weights of the clipped result: dequantize(quantize(out)) diag(s)^-1.
    std::vector<uint8_t> row(static_cast<size_t>(awq_int4_row_bytes(num_in, group)));
    std::vector<float> w_eff(out.size());
    for (int64_t o = 0; o < num_out; ++o) {
      quantize_row_awq_int4(out.data() + o * num_in, row.data(), num_in, group);
      dequantize_row_awq_int4(row.data(), w_eff.data() + o * num_in, num_in, group);
      for (int64_t i = 0; i < num_in; ++i) w_eff[size_t(o * num_in + i)] /= scales[size_t(i)];
    }
    *mse = output_mse(w, w_eff, num_out, num_in, stats);
  }
  return out;
}

AwqScales search_awq_scales(const float* w, int64_t num_out, int64_t num_in, int64_t group,
                            const LinearInputStats& stats, int32_t num_grid) {
  PAGODA_CHECK(stats.num_in == num_in && int64_t(stats.mean_abs.size()) == num_in && stats.num_samples() > 0,
               "calibration statistics for {} input channels with samples are needed, got {} channels and {} samples",
               num_in, stats.num_in, stats.num_samples());
  PAGODA_CHECK(num_grid >= 1 && num_in % group == 0);
  AwqScales best;
  for (int32_t k = 0; k <= num_grid; ++k) {
    const float alpha = float(k) / float(num_grid);
    std::vector<float> s = k == 0 ? std::vector<float>(size_t(num_in), 1.0f) : scales_for(stats.mean_abs, alpha);
    const double mse = output_mse(w, awq_effective_weights(w, num_out, num_in, group, s), num_out, num_in, stats);
    if (k == 0) best.mse_unscaled = mse;
    if (k == 0 || mse < best.mse) {
      best.alpha = alpha;
      best.scales = std::move(s);
      best.mse = mse;
    }
  }
  return best;
}

}  // namespace pagoda::quant
