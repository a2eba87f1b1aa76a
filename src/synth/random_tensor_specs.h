// The tensor list of a random-weight GGUF (name, dims, what its values are) and the loop that generates and writes
// it: each family's writer lists its tensors; this file owns how each kind of value is filled and the seeds.
// Must not know any family's tensor names.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "format/gguf_writer.h"
#include "synth/random_model_writer.h"

namespace pagoda::synth {

// What a tensor's values are. The matrices take the options' type; the rest are f32, from the same uniform draw
// (std 0.02) mapped through u = draw / 0.0346 in [-1, 1):
enum class RandomValues : uint8_t {
  kMatrix,          // weights: fill_random_weights in the options' type
  kSmall,           // the draw itself (biases, ssm_dt's bias)
  kNorm,            // norm scales 1 + 0.5 u, in [0.5, 1.5)
  kSelectionBias,   // expert-selection biases 0.1 u
  kSinks,           // attention-sink logits 1.7 u
  kTaps,            // convolution taps 0.5 u
  kDecay,           // negative decay rates -1 + 0.5 u
};

struct RandomTensorSpec {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order
  RandomValues values;
};

// Writes the tensors of `specs` into `w` (generated one at a time while writing, seed per index) and the file to
// options.output_path. A matrix whose rows are not whole blocks of a block type is an error naming it.
// `fill_override`, when given, fills a tensor instead of the random values (it returns false to keep them).
Status write_random_tensors(format::GgufWriter& w, const std::vector<RandomTensorSpec>& specs,
                            const RandomModelOptions& options,
                            std::function<bool(const RandomTensorSpec&, std::span<uint8_t>)> fill_override = {});

}  // namespace pagoda::synth
