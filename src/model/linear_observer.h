// LinearObserver: a look at every linear layer's input as the forward pass runs, for calibration (AWQ's
// activation statistics). It watches; it never changes what the model computes.
#pragma once

#include <cstdint>

#include "model/model_weights.h"

namespace pagoda {

class LinearObserver {
 public:
  virtual ~LinearObserver() = default;
  // x: f32 [num_tokens, w.num_cols], the input of y = W x, before any AWQ input scale. Called on the thread that
  // called forward, before the product; `w.data` identifies the weight (it points into the model's file).
  virtual void observe(const WeightView& w, const float* x, int32_t num_tokens) = 0;
};

}  // namespace pagoda
