// short_conv_impl: kernels.h's short_conv written once over a vector type V and instantiated per instruction set
// (avx2/short_conv.cc with 8 f32 lanes, avx512/'s with 16). A block of kWidth channels keeps its taps and window in
// registers across every token; each product is rounded before its sum (V::mul then V::add, in files compiled with
// -ffp-contract=off), oldest first, so every table gives the scalar reference's bits. Windows of more than
// kMaxKept inputs, and the channels past the last whole block, run the reference's loop. Include it only from
// those files, with a V of internal linkage, so the instantiations never mix.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace pagoda::kernels::detail {

template <class V>
inline void short_conv(const float* taps, float* state, const float* x, float* y, int64_t dim, int32_t num_taps,
                       int64_t num_tokens) {
  constexpr int32_t kMaxKept = 7;
  const int32_t num_kept = num_taps - 1;
  int64_t c = 0;
  if (num_kept >= 0 && num_kept <= kMaxKept)
    for (; c + V::kWidth <= dim; c += V::kWidth) {
      typename V::Reg tap[kMaxKept + 1], window[kMaxKept];
      for (int32_t k = 0; k <= num_kept; ++k) tap[k] = V::loadu(taps + k * dim + c);
      for (int32_t k = 0; k < num_kept; ++k) window[k] = V::loadu(state + k * dim + c);
      for (int64_t t = 0; t < num_tokens; ++t) {
        const typename V::Reg newest = V::loadu(x + t * dim + c);
        typename V::Reg sum = V::zero();
        for (int32_t k = 0; k < num_kept; ++k) sum = V::add(sum, V::mul(window[k], tap[k]));
        sum = V::add(sum, V::mul(newest, tap[num_kept]));
        for (int32_t k = 0; k + 1 < num_kept; ++k) window[k] = window[k + 1];
        if (num_kept > 0) window[num_kept - 1] = newest;
        V::storeu(y + t * dim + c, sum);
      }
      for (int32_t k = 0; k < num_kept; ++k) V::storeu(state + k * dim + c, window[k]);
    }
  if (c == dim) return;
  // The channels past the last whole block, in the reference's loop.
  for (int64_t t = 0; t < num_tokens; ++t)
    for (int64_t ch = c; ch < dim; ++ch) {
      const float newest = x[t * dim + ch];
      float sum = 0.0f;
      for (int32_t k = 0; k < num_kept; ++k) sum += state[k * dim + ch] * taps[k * dim + ch];
      sum += newest * taps[int64_t(num_kept) * dim + ch];
      for (int32_t k = 0; k + 1 < num_kept; ++k) state[k * dim + ch] = state[(k + 1) * dim + ch];
      if (num_kept > 0) state[int64_t(num_kept - 1) * dim + ch] = newest;
      y[t * dim + ch] = sum;
    }
}

}  // namespace pagoda::kernels::detail
