// INT8 KV rows: one head's K or V vector as int8 with a symmetric f32 scale (scale = max|x| / 127, so the
// largest magnitude maps to +-127 and zero stays exactly zero). Written once per token per KV head as the
// cache is filled; the attention kernels dequantize (int8 * scale) as they read.
#pragma once

#include <cstdint>

namespace pagoda {

// Returns the scale; an all-zero row gets scale 0 and all-zero values.
float quantize_kv_int8(const float* x, int32_t n, int8_t* q);
void dequantize_kv_int8(const int8_t* q, float scale, int32_t n, float* x);

}  // namespace pagoda
