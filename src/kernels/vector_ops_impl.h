// vector_ops_impl: the element-wise ops (dot, axpy, rmsnorm, silu_mul, gelu_mul) written once over a vector type V and
// instantiated per instruction set (avx2/elementwise.cc with 8 f32 lanes, avx512/elementwise.cc with 16). V provides
// kWidth, Reg, loadu, storeu, set1, zero, add, mul, div, fmadd, hsum and exp (a vector exp accurate to ~2e-7).
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

}  // namespace pagoda::kernels::detail
