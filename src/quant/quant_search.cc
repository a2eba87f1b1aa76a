// ggml's scale searches, operation for operation: every expression keeps ggml's evaluation order (left to right,
// an int converted to float where it meets one), since a single reordered sum changes which candidate wins and so
// the bytes of the block.
#include "quant/quant_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace pagoda::quant {
namespace {

constexpr float kSearchZeroEps = 1e-15f;  // a group whose largest magnitude is below this is all zero

}  // namespace

int nearest_int(float x) {
  // Adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits (the FPU rounds ties to even).
  const float shifted = x + 12582912.f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  return (bits & 0x007fffff) - 0x00400000;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L, bool do_rmse) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kSearchZeroEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const auto clamp = [nmax](int l) { return std::max(-nmax, std::min(nmax - 1, l)); };
  const float iscale = float(-nmax) / max;
  if (!do_rmse) {
    for (int i = 0; i < n; ++i) L[i] = int8_t(clamp(nearest_int(iscale * x[i])) + nmax);
    return 1 / iscale;
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(nearest_int(iscale * x[i]));
    L[i] = int8_t(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      if (slx <= 0) continue;
      float sl2 = suml2 - w * float(L[i]) * float(L[i]);
      const int moved = clamp(nearest_int(x[i] * sl2 / slx));
      if (moved == L[i]) continue;
      slx += w * x[i] * float(moved);
      sl2 += w * float(moved) * float(moved);
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        L[i] = int8_t(moved);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, int rmse_type, const float* weights) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kSearchZeroEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const auto clamp = [nmax](int l) { return std::max(-nmax, std::min(nmax - 1, l)); };
  const auto weight = [&](int i) -> float {
    if (weights != nullptr) return weights[i];
    switch (rmse_type) {
      case 1: return x[i] * x[i];
      case 2: return 1;
      case 3: return std::fabs(x[i]);
      default: return std::sqrt(std::fabs(x[i]));
    }
  };
  float iscale = float(-nmax) / max;
  if (rmse_type == 0) {
    for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + clamp(nearest_int(iscale * x[i])));
    return 1 / iscale;
  }
  bool return_early = false;
  if (rmse_type < 0) {
    rmse_type = -rmse_type;
    return_early = true;
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp(nearest_int(iscale * x[i]));
    L[i] = int8_t(l + nmax);
    const float w = weight(i);
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  if (return_early) return suml2 > 0 ? 0.5f * (scale + 1 / iscale) : 1 / iscale;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp(nearest_int(iscale * x[i]));
      const float w = weight(i);
      sumlx += w * x[i] * float(l);
      suml2 += w * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) L[i] = int8_t(nmax + clamp(nearest_int(iscale * x[i])));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

namespace {

// make_qkx2_quants and make_qkx3_quants differ only in the empty-range test and the default weights.
float make_qkx_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min, uint8_t* Laux,
                      float rmin, float rdelta, int nstep, bool use_mad, bool empty_when_not_above) {
  const auto weight = [&](int i) { return weights != nullptr ? weights[i] : x[i] * x[i]; };
  float min = x[0];
  float max = x[0];
  float sum_w = weight(0);
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weight(i);
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (empty_when_not_above ? max <= min : max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *neg_min = -min;
    return 0.f;
  }
  const auto error = [use_mad](float diff) { return use_mad ? std::fabs(diff) : diff * diff; };
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    const float diff = scale * float(L[i]) + min - x[i];
    best_error += weight(i) * error(diff);
  }
  if (nstep < 1) {
    *neg_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - min))));
      Laux[i] = uint8_t(l);
      const float w = weight(i);
      sum_l += w * float(l);
      sum_l2 += w * float(l) * float(l);
      sum_xl += w * float(l) * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = this_scale * float(Laux[i]) + this_min - x[i];
        cur_error += weight(i) * error(diff);
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *neg_min = -min;
  return scale;
}

}  // namespace

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  return make_qkx_quants(n, nmax, x, weights, L, neg_min, Laux, rmin, rdelta, nstep, use_mad, false);
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* neg_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  return make_qkx_quants(n, nmax, x, weights, L, neg_min, Laux, rmin, rdelta, nstep, use_mad, true);
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* weights) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (max < kSearchZeroEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = float(nmax) / max;
  for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * float(L[i]);
    best_mse += weights[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * float(is) + float(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * float(l);
      mse += weights[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = uint8_t(l);
    const float w = weights[i];
    sumlx += w * x[i] * float(l);
    suml2 += w * float(l) * float(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = weights[i];
      float slx = sumlx - w * x[i] * float(L[i]);
      float sl2 = suml2 - w * float(L[i]) * float(L[i]);
      if (slx > 0 && sl2 > 0) {
        const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (new_l != L[i]) {
          slx += w * x[i] * float(new_l);
          sl2 += w * float(new_l) * float(new_l);
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = uint8_t(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

}  // namespace pagoda::quant
