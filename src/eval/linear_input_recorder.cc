// Per-weight input statistics for AWQ calibration.
#include "eval/linear_input_recorder.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace pagoda::eval {

void LinearInputRecorder::observe(const WeightView& w, const float* x, int32_t num_tokens) {
  Accumulator& a = by_weight_[w.data];
  if (a.num_in == 0) {
    a.num_in = w.num_cols;
    a.sum_abs.assign(size_t(w.num_cols), 0.0);
  }
  PAGODA_CHECK(a.num_in == w.num_cols, "one weight seen with {} and {} input channels", a.num_in, w.num_cols);
  const size_t row_len = size_t(a.num_in);
  for (int32_t t = 0; t < num_tokens; ++t) {
    const float* row = x + size_t(t) * row_len;
    for (size_t i = 0; i < row_len; ++i) a.sum_abs[i] += std::fabs(double(row[i]));
    // Reservoir sampling: after n rows each has been kept with probability max_samples / n.
    const int64_t seen = a.num_rows_seen++;
    int64_t slot = -1;
    if (seen < max_samples_) {
      a.samples.resize(a.samples.size() + row_len);
      slot = seen;
    } else {
      const int64_t r = int64_t(std::uniform_int_distribution<uint64_t>(0, uint64_t(seen))(rng_));
      if (r < max_samples_) slot = r;
    }
    if (slot >= 0) std::memcpy(a.samples.data() + size_t(slot) * row_len, row, row_len * sizeof(float));
  }
}

format::CalibrationStats LinearInputRecorder::stats_by_name(const format::GgufFile& file) const {
  format::CalibrationStats out;
  for (const format::GgufTensorInfo& t : file.tensors()) {
    const auto it = by_weight_.find(t.data);
    if (it == by_weight_.end() || it->second.num_rows_seen == 0) continue;
    const Accumulator& a = it->second;
    quant::LinearInputStats s;
    s.num_in = a.num_in;
    s.num_rows_seen = a.num_rows_seen;
    s.mean_abs.resize(size_t(a.num_in));
    for (size_t i = 0; i < s.mean_abs.size(); ++i) s.mean_abs[i] = float(a.sum_abs[i] / double(a.num_rows_seen));
    s.samples = a.samples;
    out.emplace(t.name, std::move(s));
  }
  return out;
}

}  // namespace pagoda::eval
