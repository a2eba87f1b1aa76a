// Generating and writing a random-weight GGUF's tensor list.
#include "synth/random_tensor_specs.h"

#include <fmt/format.h>

#include "format/gguf_types.h"

namespace pagoda::synth {
namespace {

float mapped_value(RandomValues values, float draw) {
  const float u = draw / 0.034641016f;  // uniform in [-1, 1)
  switch (values) {
    case RandomValues::kNorm: return 1.0f + 0.5f * u;
    case RandomValues::kSelectionBias: return 0.1f * u;
    case RandomValues::kSinks: return 1.7f * u;
    case RandomValues::kTaps: return 0.5f * u;
    case RandomValues::kDecay: return -1.0f + 0.5f * u;
    case RandomValues::kMatrix:
    case RandomValues::kSmall: break;
  }
  return draw;
}

}  // namespace

Status write_random_tensors(format::GgufWriter& w, const std::vector<RandomTensorSpec>& specs,
                            const RandomModelOptions& o,
                            std::function<bool(const RandomTensorSpec&, std::span<uint8_t>)> fill_override) {
  using format::GgmlType;
  const int32_t num_tensors = int32_t(specs.size());
  const bool block_type = o.weight_type == GgmlType::kQ8_0 || o.weight_type == GgmlType::kQ4_0;
  for (int32_t i = 0; i < num_tensors; ++i) {
    const RandomTensorSpec& spec = specs[size_t(i)];
    const bool matrix = spec.values == RandomValues::kMatrix;
    if (matrix && block_type && spec.dims[0] % 32 != 0)
      return make_error(fmt::format("{}: {} rows of {} values are not whole {} blocks", o.shape.name, spec.name,
                                    spec.dims[0], format::ggml_type_name(o.weight_type)));
    const GgmlType type = matrix ? o.weight_type : GgmlType::kF32;
    uint64_t rows = 1;
    for (size_t d = 1; d < spec.dims.size(); ++d) rows *= uint64_t(spec.dims[d]);
    const uint64_t bytes = format::ggml_row_bytes(type, uint64_t(spec.dims[0])) * rows;
    const uint64_t seed = o.seed * 0x100000001B3ull + uint64_t(i);
    w.add_tensor_generated(spec.name, type, spec.dims, bytes,
                           [&o, &fill_override, &spec, type, seed, i, num_tensors, matrix](std::span<uint8_t> dst) {
                             if (!fill_override || !fill_override(spec, dst)) {
                               fill_random_weights(dst, type, seed);
                               if (!matrix && spec.values != RandomValues::kSmall) {
                                 float* v = reinterpret_cast<float*>(dst.data());
                                 for (size_t k = 0; k < dst.size() / 4; ++k) v[k] = mapped_value(spec.values, v[k]);
                               }
                             }
                             if (o.on_tensor) o.on_tensor(i + 1, num_tensors, spec.name);
                           });
  }
  return w.write(o.output_path);
}

}  // namespace pagoda::synth
