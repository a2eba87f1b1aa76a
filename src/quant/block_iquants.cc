// Reference dequantization of ggml's IQ3_XXS, IQ3_S, IQ1_S, IQ1_M and IQ2_* super-blocks (scalar), with ggml's f32
// operations in ggml's order, and their decoding to integers; the traversals follow the layouts in block_iquants.h.
#include "quant/block_iquants.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "quant/lattice_grids.h"

namespace pagoda::quant {
namespace {

void check_row(int64_t n, const char* type) {
  PAGODA_CHECK(n % kQK_K == 0, "{} rows hold whole super-blocks of {} values, got {}", type, kQK_K, n);
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void iq1_m_words(const BlockIQ1_M& b, uint16_t w[4]) { std::memcpy(w, b.scales, 8); }

// IQ3_XXS sub-block s's grid point for values 4p .. 4p + 3 (p < 8), its sign byte for 8l .. 8l + 7, and its ls.
uint32_t iq3_xxs_point(const BlockIQ3_XXS& b, int s, int p) { return kIq3XxsGrid[b.qs[8 * s + p]]; }
uint8_t iq3_xxs_signs(const BlockIQ3_XXS& b, int s, int l) {
  return iq_signs_of(load_u32(b.qs + 64 + 4 * s) >> (7 * l));
}
int iq3_xxs_ls(const BlockIQ3_XXS& b, int s) { return int(load_u32(b.qs + 64 + 4 * s) >> 28); }

uint32_t iq3_s_point(const BlockIQ3_S& b, int s, int p) {
  return kIq3SGrid[b.qs[8 * s + p] | ((b.qh[s] >> p) & 1) << 8];
}
int iq3_s_ls(const BlockIQ3_S& b, int s) { return (b.scales[s / 2] >> (4 * (s % 2))) & 15; }

uint64_t iq1_s_point(const BlockIQ1_S& b, int s, int l) {
  return kIq1SGrid[b.qs[4 * s + l] | ((b.qh[s] >> (3 * l)) & 7) << 8];
}

uint64_t iq1_m_point(const BlockIQ1_M& b, int g) {
  return kIq1SGrid[b.qs[g] | ((b.qh[g / 2] >> (4 * (g % 2))) & 7) << 8];
}
bool iq1_m_delta_negative(const BlockIQ1_M& b, int g) { return (b.qh[g / 2] >> (4 * (g % 2) + 3)) & 1; }
int iq1_m_ls(const uint16_t w[4], int h) { return (w[h / 4] >> (3 * (h % 4))) & 7; }

constexpr float kIq1Delta = 0.125f;

}  // namespace

uint16_t iq1_m_d(const BlockIQ1_M& b) {
  uint16_t w[4];
  iq1_m_words(b, w);
  return uint16_t((w[0] >> 12) | ((w[1] >> 8) & 0x00f0) | ((w[2] >> 4) & 0x0f00) | (w[3] & 0xf000));
}

void dequantize_row_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t n) {
  check_row(n, "IQ3_XXS");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int s = 0; s < 8; ++s) {
      const float db = d * (0.5f + float(iq3_xxs_ls(x[b], s))) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = iq3_xxs_signs(x[b], s, l);
        for (int k = 0; k < 2; ++k) {
          const uint32_t point = iq3_xxs_point(x[b], s, 2 * l + k);
          for (int j = 0; j < 4; ++j)
            *y++ = db * float(grid_coordinate(point, j)) * ((signs >> (4 * k + j)) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

void dequantize_row_iq3_s(const BlockIQ3_S* x, float* y, int64_t n) {
  check_row(n, "IQ3_S");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int s = 0; s < 8; ++s) {
      const float db = d * float(1 + 2 * iq3_s_ls(x[b], s));
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = x[b].signs[4 * s + l];
        for (int k = 0; k < 2; ++k) {
          const uint32_t point = iq3_s_point(x[b], s, 2 * l + k);
          for (int j = 0; j < 4; ++j)
            *y++ = db * float(grid_coordinate(point, j)) * ((signs >> (4 * k + j)) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

void dequantize_row_iq1_s(const BlockIQ1_S* x, float* y, int64_t n) {
  check_row(n, "IQ1_S");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int s = 0; s < 8; ++s) {
      const uint16_t qh = x[b].qh[s];
      const float dl = d * float(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l) {
        const uint64_t point = iq1_s_point(x[b], s, l);
        for (int j = 0; j < 8; ++j) *y++ = dl * (float(grid_coordinate(point, j)) + delta);
      }
    }
  }
}

void dequantize_row_iq1_m(const BlockIQ1_M* x, float* y, int64_t n) {
  check_row(n, "IQ1_M");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(iq1_m_d(x[b]));
    uint16_t w[4];
    iq1_m_words(x[b], w);
    for (int h = 0; h < 16; ++h) {
      const float dl = d * float(2 * iq1_m_ls(w, h) + 1);
      for (int g = 2 * h; g < 2 * h + 2; ++g) {
        const uint64_t point = iq1_m_point(x[b], g);
        const float delta = iq1_m_delta_negative(x[b], g) ? -kIq1Delta : kIq1Delta;
        for (int j = 0; j < 8; ++j) *y++ = dl * (float(grid_coordinate(point, j)) + delta);
      }
    }
  }
}

void dequantize_row_iq2_xxs(const BlockIQ2_XXS* x, float* y, int64_t n) {
  check_row(n, "IQ2_XXS");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int s = 0; s < 8; ++s) {
      const uint32_t a = uint32_t(x[b].qs[4 * s]) | uint32_t(x[b].qs[4 * s + 1]) << 16;
      const uint32_t w = uint32_t(x[b].qs[4 * s + 2]) | uint32_t(x[b].qs[4 * s + 3]) << 16;
      const float db = d * (0.5f + float(w >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t point = kIq2XxsGrid[(a >> (8 * l)) & 255];
        const uint8_t signs = iq_signs_of(w >> (7 * l));
        for (int j = 0; j < 8; ++j) *y++ = db * float(grid_coordinate(point, j)) * ((signs >> j) & 1 ? -1.0f : 1.0f);
      }
    }
  }
}

void dequantize_row_iq2_xs(const BlockIQ2_XS* x, float* y, int64_t n) {
  check_row(n, "IQ2_XS");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int g = 0; g < 32; ++g) {
      const int ls = (x[b].scales[g / 4] >> (4 * ((g / 2) % 2))) & 15;
      const float db = d * (0.5f + float(ls)) * 0.25f;
      const uint64_t point = kIq2XsGrid[x[b].qs[g] & 511];
      const uint8_t signs = iq_signs_of(x[b].qs[g] >> 9);
      for (int j = 0; j < 8; ++j) *y++ = db * float(grid_coordinate(point, j)) * ((signs >> j) & 1 ? -1.0f : 1.0f);
    }
  }
}

void dequantize_row_iq2_s(const BlockIQ2_S* x, float* y, int64_t n) {
  check_row(n, "IQ2_S");
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_float(x[b].d);
    for (int g = 0; g < 32; ++g) {
      const int ls = (x[b].scales[g / 4] >> (4 * ((g / 2) % 2))) & 15;
      const float db = d * (0.5f + float(ls)) * 0.25f;
      const uint64_t point = kIq2SGrid[x[b].qs[g] | ((x[b].qh[g / 4] >> (2 * (g % 4))) & 3) << 8];
      const uint8_t signs = x[b].qs[32 + g];
      for (int j = 0; j < 8; ++j) *y++ = db * float(grid_coordinate(point, j)) * ((signs >> j) & 1 ? -1.0f : 1.0f);
    }
  }
}

void decode_iquant_block(const BlockIQ3_XXS& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 1;
  for (int s = 0; s < 8; ++s) {
    out.scales[2 * s] = out.scales[2 * s + 1] = int8_t(2 * iq3_xxs_ls(b, s) + 1);
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = iq3_xxs_signs(b, s, l);
      for (int k = 0; k < 2; ++k) {
        const uint32_t point = iq3_xxs_point(b, s, 2 * l + k);
        for (int j = 0; j < 4; ++j) {
          const int q = grid_coordinate(point, j) / 2;  // every IQ3_XXS coordinate is even
          out.q[32 * s + 8 * l + 4 * k + j] = int8_t((signs >> (4 * k + j)) & 1 ? -q : q);
        }
      }
    }
  }
}

void decode_iquant_block(const BlockIQ3_S& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 0;
  for (int s = 0; s < 8; ++s) {
    out.scales[2 * s] = out.scales[2 * s + 1] = int8_t(2 * iq3_s_ls(b, s) + 1);
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = b.signs[4 * s + l];
      for (int k = 0; k < 2; ++k) {
        const uint32_t point = iq3_s_point(b, s, 2 * l + k);
        for (int j = 0; j < 4; ++j) {
          const int q = grid_coordinate(point, j);
          out.q[32 * s + 8 * l + 4 * k + j] = int8_t((signs >> (4 * k + j)) & 1 ? -q : q);
        }
      }
    }
  }
}

void decode_iquant_block(const BlockIQ1_S& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 3;
  for (int s = 0; s < 8; ++s) {
    const uint16_t qh = b.qh[s];
    out.scales[2 * s] = out.scales[2 * s + 1] = int8_t(2 * ((qh >> 12) & 7) + 1);
    const int delta8 = qh & 0x8000 ? -1 : 1;
    for (int l = 0; l < 4; ++l) {
      const uint64_t point = iq1_s_point(b, s, l);
      for (int j = 0; j < 8; ++j) out.q[32 * s + 8 * l + j] = int8_t(8 * grid_coordinate(point, j) + delta8);
    }
  }
}

void decode_iquant_block(const BlockIQ1_M& b, DecodedIquantBlock& out) {
  out.d = iq1_m_d(b);
  out.shift = 3;
  uint16_t w[4];
  iq1_m_words(b, w);
  for (int h = 0; h < 16; ++h) out.scales[h] = int8_t(2 * iq1_m_ls(w, h) + 1);
  for (int g = 0; g < 32; ++g) {
    const uint64_t point = iq1_m_point(b, g);
    const int delta8 = iq1_m_delta_negative(b, g) ? -1 : 1;
    for (int j = 0; j < 8; ++j) out.q[8 * g + j] = int8_t(8 * grid_coordinate(point, j) + delta8);
  }
}

namespace {

// One IQ2 group of 8 values (grid point and sign byte) into out.q[8g ..].
void put_iq2_group(uint64_t point, uint8_t signs, int g, DecodedIquantBlock& out) {
  for (int j = 0; j < 8; ++j) {
    const int q = grid_coordinate(point, j);
    out.q[8 * g + j] = int8_t((signs >> j) & 1 ? -q : q);
  }
}

// IQ2_XS and IQ2_S: the 16-value half h's ls is nibble h % 2 of scales[h / 2].
void put_iq2_half_scales(const uint8_t* scales, DecodedIquantBlock& out) {
  for (int h = 0; h < 16; ++h) out.scales[h] = int8_t(2 * ((scales[h / 2] >> (4 * (h % 2))) & 15) + 1);
}

}  // namespace

void decode_iquant_block(const BlockIQ2_XXS& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 3;
  for (int s = 0; s < 8; ++s) {
    const uint32_t a = uint32_t(b.qs[4 * s]) | uint32_t(b.qs[4 * s + 1]) << 16;
    const uint32_t w = uint32_t(b.qs[4 * s + 2]) | uint32_t(b.qs[4 * s + 3]) << 16;
    out.scales[2 * s] = out.scales[2 * s + 1] = int8_t(2 * (w >> 28) + 1);
    for (int l = 0; l < 4; ++l)
      put_iq2_group(kIq2XxsGrid[(a >> (8 * l)) & 255], iq_signs_of(w >> (7 * l)), 4 * s + l, out);
  }
}

void decode_iquant_block(const BlockIQ2_XS& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 3;
  put_iq2_half_scales(b.scales, out);
  for (int g = 0; g < 32; ++g) put_iq2_group(kIq2XsGrid[b.qs[g] & 511], iq_signs_of(b.qs[g] >> 9), g, out);
}

void decode_iquant_block(const BlockIQ2_S& b, DecodedIquantBlock& out) {
  out.d = b.d;
  out.shift = 3;
  put_iq2_half_scales(b.scales, out);
  for (int g = 0; g < 32; ++g)
    put_iq2_group(kIq2SGrid[b.qs[g] | ((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8], b.qs[32 + g], g, out);
}

}  // namespace pagoda::quant
