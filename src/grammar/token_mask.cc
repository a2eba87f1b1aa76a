// apply_token_mask (token_mask.h).
#include "grammar/token_mask.h"

#include <bit>
#include <limits>

namespace pagoda::grammar {

int32_t apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  int32_t num_allowed = 0;
  const size_t n = logits.size();
  for (size_t w = 0; w * 32 < n; ++w) {
    const uint32_t bits = w < mask.size() ? mask[w] : 0u;
    const size_t end = std::min(n, w * 32 + 32);
    if (bits == 0xFFFFFFFFu && end == w * 32 + 32) {
      num_allowed += 32;
      continue;
    }
    for (size_t i = w * 32; i < end; ++i) {
      if ((bits >> (i & 31)) & 1u) {
        ++num_allowed;
      } else {
        logits[i] = kNegInf;
      }
    }
  }
  return num_allowed;
}

}  // namespace pagoda::grammar
