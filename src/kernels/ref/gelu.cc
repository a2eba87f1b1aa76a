// Scalar reference of gelu_mul: GELU with the tanh approximation (HF's gelu_pytorch_tanh, Gemma's FFN), times up.
#include <cmath>

#include "kernels/ref/ref_kernels.h"

namespace pagoda::kernels::ref {

void gelu_mul(float* gate, const float* up, int64_t n) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[i];
  }
}

}  // namespace pagoda::kernels::ref
