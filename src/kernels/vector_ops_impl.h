// vector_ops_impl: the element-wise ops (dot, axpy, rmsnorm, silu_mul, gelu_mul, swiglu_oai_mul,
// softmax, rope) written once over a
// vector type V and instantiated per instruction set (avx2/elementwise.cc and rope.cc with 8 f32 lanes, avx512/'s with
// 16). V provides kWidth, Reg, loadu, storeu, set1, zero, add, sub, mul, div, max, fmadd, hsum, hmax and exp (a vector
// exp accurate to ~2e-7); rope also dup_pairs (kWidth / 2 values at p, each twice), swap_pairs (lanes 2i, 2i+1
// exchanged) and addsub (a - b in even lanes, a + b in odd ones).
// Include it only from those files, with a V of internal linkage, so the instantiations never mix; it calls no
// inline library function either (std::sqrt's wrapper could be the copy the linker keeps for every caller).
#pragma once

#include <cstdint>

namespace pagoda::kernels::detail {

// sum_i a[i] * b[i]: two accumulators of kWidth lanes, then one, then a scalar tail.
template <class V>
inline float dot(const float* a, const float* b, int64_t n) {
  typename V::Reg acc0 = V::zero(), acc1 = V::zero();
  int64_t i = 0;
  for (; i + 2 * V::kWidth <= n; i += 2 * V::kWidth) {
    acc0 = V::fmadd(V::loadu(a + i), V::loadu(b + i), acc0);
    acc1 = V::fmadd(V::loadu(a + i + V::kWidth), V::loadu(b + i + V::kWidth), acc1);
  }
  for (; i + V::kWidth <= n; i += V::kWidth) acc0 = V::fmadd(V::loadu(a + i), V::loadu(b + i), acc0);
  float sum = V::hsum(V::add(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// The 1 / rms(x) that rmsnorm multiplies by.
template <class V>
inline float rms_scale(const float* x, int64_t n, float eps) {
  return 1.0f / __builtin_sqrtf(dot<V>(x, x, n) / float(n) + eps);
}

template <class V>
inline void rmsnorm(const float* x, const float* weight, float* y, int64_t n, float eps) {
  const float scale = rms_scale<V>(x, n, eps);
  const typename V::Reg vs = V::set1(scale);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth)
    V::storeu(y + i, V::mul(V::mul(V::loadu(x + i), vs), V::loadu(weight + i)));
  for (; i < n; ++i) y[i] = x[i] * scale * weight[i];
}

template <class V>
inline void axpy(float a, const float* x, float* y, int64_t n) {
  const typename V::Reg va = V::set1(a);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::storeu(y + i, V::fmadd(va, V::loadu(x + i), V::loadu(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

template <class V>
inline typename V::Reg silu_mul(typename V::Reg g, typename V::Reg u) {
  const typename V::Reg e = V::exp(V::mul(g, V::set1(-1.0f)));  // exp(-g)
  return V::mul(V::div(g, V::add(V::set1(1.0f), e)), u);
}

// gate[i] = silu(gate[i]) * up[i]. The tail goes through the same vector exp (padded), not a scalar one: then an
// element's bits do not depend on whether it falls in the tail, and a slice gives what the whole row gives.
template <class V>
inline void silu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::storeu(gate + i, silu_mul<V>(V::loadu(gate + i), V::loadu(up + i)));
  if (i < n) {
    alignas(64) float g[V::kWidth] = {}, u[V::kWidth] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    V::storeu(g, silu_mul<V>(V::loadu(g), V::loadu(u)));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

// GELU's tanh approximation times up: 0.5 g (1 + tanh(u)) = g / (1 + exp(-2u)) with u = sqrt(2/pi) (g + 0.044715 g^3).
// The sigmoid form needs no tanh and saturates cleanly (exp's overflow gives g / inf = -0 for large negative g).
template <class V>
inline typename V::Reg gelu_mul(typename V::Reg g, typename V::Reg u) {
  const typename V::Reg inner = V::fmadd(V::set1(0.044715f), V::mul(V::mul(g, g), g), g);
  const typename V::Reg e = V::exp(V::mul(V::set1(-2.0f * 0.79788456080286535588f), inner));  // exp(-2u)
  return V::mul(V::div(g, V::add(V::set1(1.0f), e)), u);
}

// gate[i] = gelu_tanh(gate[i]) * up[i], the tail padded through the vector code as silu_mul's.
template <class V>
inline void gelu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::storeu(gate + i, gelu_mul<V>(V::loadu(gate + i), V::loadu(up + i)));
  if (i < n) {
    alignas(64) float g[V::kWidth] = {}, u[V::kWidth] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    V::storeu(g, gelu_mul<V>(V::loadu(g), V::loadu(u)));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

// gpt-oss's clamped SwiGLU: x = min(g, limit), y = clamp(u, -limit, limit), x / (1 + exp(-alpha x)) * (y + 1). V has
// max only: min(a, b) = -max(-a, -b).
template <class V>
inline typename V::Reg swiglu_oai_mul(typename V::Reg g, typename V::Reg u, typename V::Reg alpha,
                                      typename V::Reg limit) {
  using Reg = typename V::Reg;
  const Reg minus_one = V::set1(-1.0f);
  const Reg neg_limit = V::mul(limit, minus_one);
  const Reg x = V::mul(V::max(V::mul(g, minus_one), neg_limit), minus_one);
  const Reg y = V::max(V::mul(V::max(V::mul(u, minus_one), neg_limit), minus_one), neg_limit);
  const Reg e = V::exp(V::mul(V::mul(alpha, x), minus_one));  // exp(-alpha x)
  return V::mul(V::div(x, V::add(V::set1(1.0f), e)), V::add(y, V::set1(1.0f)));
}

// gate[i] = swiglu_oai(gate[i], up[i]), the tail padded through the vector code as silu_mul's.
template <class V>
inline void swiglu_oai_mul(float* gate, const float* up, int64_t n, float alpha, float limit) {
  const typename V::Reg va = V::set1(alpha), vl = V::set1(limit);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth)
    V::storeu(gate + i, swiglu_oai_mul<V>(V::loadu(gate + i), V::loadu(up + i), va, vl));
  if (i < n) {
    alignas(64) float g[V::kWidth] = {}, u[V::kWidth] = {};
    for (int64_t j = i; j < n; ++j) g[j - i] = gate[j], u[j - i] = up[j];
    V::storeu(g, swiglu_oai_mul<V>(V::loadu(g), V::loadu(u), va, vl));
    for (int64_t j = i; j < n; ++j) gate[j] = g[j - i];
  }
}

// y = softmax(x): the max, exp(x - max) through the vector exp (the tail padded with the max, its padding lanes left
// out of the sum), then one multiply by 1 / sum, as the reference does.
template <class V>
inline void softmax(const float* x, float* y, int64_t n) {
  using Reg = typename V::Reg;
  Reg vmax = V::set1(x[0]);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) vmax = V::max(vmax, V::loadu(x + i));
  float max = V::hmax(vmax);
  for (int64_t j = i; j < n; ++j) max = x[j] > max ? x[j] : max;
  const Reg vm = V::set1(max);
  Reg acc = V::zero();
  for (i = 0; i + V::kWidth <= n; i += V::kWidth) {
    const Reg e = V::exp(V::sub(V::loadu(x + i), vm));
    V::storeu(y + i, e);
    acc = V::add(acc, e);
  }
  float sum = V::hsum(acc);
  if (i < n) {
    alignas(64) float t[V::kWidth];
    for (int j = 0; j < V::kWidth; ++j) t[j] = i + j < n ? x[i + j] : max;
    V::storeu(t, V::exp(V::sub(V::loadu(t), vm)));
    for (int64_t j = i; j < n; ++j) sum += (y[j] = t[j - i]);
  }
  const Reg inv = V::set1(1.0f / sum);
  for (i = 0; i + V::kWidth <= n; i += V::kWidth) V::storeu(y + i, V::mul(V::loadu(y + i), inv));
  for (; i < n; ++i) y[i] *= 1.0f / sum;
}

// RoPE of num_heads heads (kernels.h's contract): each rotated value is a*c - b*s or a*s + b*c with both products
// rounded (no fma: the file instantiating it is compiled with -ffp-contract=off), so every table gives the scalar
// reference's bits. Adjacent pairs: x * (c0 c0 c1 c1 ..) -/+ swap_pairs(x) * (s0 s0 s1 s1 ..); neox: the halves.
template <class V>
inline void rope(const float* in, float* out, int32_t num_heads, int32_t head_dim, int32_t half_rope, const float* cs,
                 const float* sn, bool neox) {
  constexpr int W = V::kWidth;
  // Heads wholly rotated whose size divides the vector (the bundled model's 8 values under 8 or 16 lanes): W /
  // head_dim heads a vector, the tables repeated for each, rather than every head through the scalar tail below.
  int32_t first_head = 0;
  if (!neox && 2 * half_rope == head_dim && head_dim <= W && W % head_dim == 0) {
    alignas(64) float c[W], s[W];
    for (int l = 0; l < W; ++l) {
      c[l] = cs[(l % head_dim) / 2];
      s[l] = sn[(l % head_dim) / 2];
    }
    const typename V::Reg vc = V::loadu(c), vs = V::loadu(s);
    for (const int32_t per = W / head_dim; first_head + per <= num_heads; first_head += per) {
      const typename V::Reg x = V::loadu(in + int64_t(first_head) * head_dim);
      V::storeu(out + int64_t(first_head) * head_dim, V::addsub(V::mul(x, vc), V::mul(V::swap_pairs(x), vs)));
    }
  }
  for (int32_t h = first_head; h < num_heads; ++h) {
    const float* src = in + int64_t(h) * head_dim;
    float* dst = out + int64_t(h) * head_dim;
    int32_t i = 0;
    if (neox) {
      for (; i + W <= half_rope; i += W) {
        const typename V::Reg a = V::loadu(src + i), b = V::loadu(src + i + half_rope);
        const typename V::Reg c = V::loadu(cs + i), s = V::loadu(sn + i);
        V::storeu(dst + i, V::sub(V::mul(a, c), V::mul(b, s)));
        V::storeu(dst + i + half_rope, V::add(V::mul(a, s), V::mul(b, c)));
      }
      for (; i < half_rope; ++i) {
        const float a = src[i], b = src[i + half_rope];
        dst[i] = a * cs[i] - b * sn[i];
        dst[i + half_rope] = a * sn[i] + b * cs[i];
      }
    } else {
      for (; 2 * i + W <= 2 * half_rope; i += W / 2) {
        const typename V::Reg x = V::loadu(src + 2 * i);
        const typename V::Reg c = V::dup_pairs(cs + i), s = V::dup_pairs(sn + i);
        V::storeu(dst + 2 * i, V::addsub(V::mul(x, c), V::mul(V::swap_pairs(x), s)));
      }
      for (; i < half_rope; ++i) {
        const float a = src[2 * i], b = src[2 * i + 1];
        dst[2 * i] = a * cs[i] - b * sn[i];
        dst[2 * i + 1] = a * sn[i] + b * cs[i];
      }
    }
    if (src != dst)
      for (int32_t j = 2 * half_rope; j < head_dim; ++j) dst[j] = src[j];
  }
}

}  // namespace pagoda::kernels::detail
