// AVX-512 RoPE: vector_ops_impl.h's rope over 16 lanes, compiled with -ffp-contract=off (the scalar reference's bits).
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/vec_f32x16.h"
#include "kernels/vector_ops_impl.h"

namespace pagoda::kernels::avx512 {

void rope(const float* in, float* out, int32_t num_heads, int32_t head_dim, int32_t half_rope, const float* cs,
          const float* sn, bool neox) {
  detail::rope<F32x16>(in, out, num_heads, head_dim, half_rope, cs, sn, neox);
}

}  // namespace pagoda::kernels::avx512
