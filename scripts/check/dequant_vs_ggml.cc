// pagoda's reference dequantizers (format/ggml_dequantize.h) against ggml's own dequantize_row_* from the peer's
// libggml-base, on random bytes (so NaN, inf and subnormal scales too): every float must have the same bits (two
// NaNs count as equal). Built and run by dequant_vs_ggml.sh; prints one line per type, exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "format/ggml_dequantize.h"

extern "C" {
#define PAGODA_GGML_DEQUANT(name) void dequantize_row_##name(const void* x, float* y, int64_t k);
PAGODA_GGML_DEQUANT(q4_0)
PAGODA_GGML_DEQUANT(q8_0)
PAGODA_GGML_DEQUANT(q4_1)
PAGODA_GGML_DEQUANT(q5_0)
PAGODA_GGML_DEQUANT(q5_1)
PAGODA_GGML_DEQUANT(q2_K)
PAGODA_GGML_DEQUANT(q3_K)
PAGODA_GGML_DEQUANT(q4_K)
PAGODA_GGML_DEQUANT(q5_K)
PAGODA_GGML_DEQUANT(q6_K)
PAGODA_GGML_DEQUANT(q8_K)
PAGODA_GGML_DEQUANT(iq4_nl)
PAGODA_GGML_DEQUANT(iq4_xs)
PAGODA_GGML_DEQUANT(mxfp4)
PAGODA_GGML_DEQUANT(tq1_0)
PAGODA_GGML_DEQUANT(tq2_0)
PAGODA_GGML_DEQUANT(iq3_xxs)
PAGODA_GGML_DEQUANT(iq3_s)
PAGODA_GGML_DEQUANT(iq1_s)
PAGODA_GGML_DEQUANT(iq1_m)
PAGODA_GGML_DEQUANT(iq2_xxs)
PAGODA_GGML_DEQUANT(iq2_xs)
PAGODA_GGML_DEQUANT(iq2_s)
}

int main() {
  using pagoda::format::GgmlType;
  struct Case {
    GgmlType type;
    void (*ggml)(const void*, float*, int64_t);
  };
  const Case cases[] = {
      {GgmlType::kQ4_0, dequantize_row_q4_0},       {GgmlType::kQ8_0, dequantize_row_q8_0},
      {GgmlType::kQ4_1, dequantize_row_q4_1},       {GgmlType::kQ5_0, dequantize_row_q5_0},
      {GgmlType::kQ5_1, dequantize_row_q5_1},       {GgmlType::kQ2_K, dequantize_row_q2_K},
      {GgmlType::kQ3_K, dequantize_row_q3_K},       {GgmlType::kQ4_K, dequantize_row_q4_K},
      {GgmlType::kQ5_K, dequantize_row_q5_K},       {GgmlType::kQ6_K, dequantize_row_q6_K},
      {GgmlType::kQ8_K, dequantize_row_q8_K},       {GgmlType::kIQ4_NL, dequantize_row_iq4_nl},
      {GgmlType::kIQ4_XS, dequantize_row_iq4_xs},   {GgmlType::kMXFP4, dequantize_row_mxfp4},
      {GgmlType::kTQ1_0, dequantize_row_tq1_0},     {GgmlType::kTQ2_0, dequantize_row_tq2_0},
      {GgmlType::kIQ3_XXS, dequantize_row_iq3_xxs}, {GgmlType::kIQ3_S, dequantize_row_iq3_s},
      {GgmlType::kIQ1_S, dequantize_row_iq1_s},     {GgmlType::kIQ1_M, dequantize_row_iq1_m},
      {GgmlType::kIQ2_XXS, dequantize_row_iq2_xxs}, {GgmlType::kIQ2_XS, dequantize_row_iq2_xs},
      {GgmlType::kIQ2_S, dequantize_row_iq2_s},
  };
  std::mt19937 rng(1);
  int failed = 0;
  constexpr int64_t kN = 256 * 64;  // a row of 64 super-blocks
  constexpr int kRounds = 200;
  for (const Case& c : cases) {
    std::vector<uint8_t> src(pagoda::format::ggml_row_bytes(c.type, kN));
    std::vector<float> theirs(kN), ours(kN);
    int64_t differing = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (uint8_t& b : src) b = uint8_t(rng());
      c.ggml(src.data(), theirs.data(), kN);
      pagoda::format::dequantize_ggml_row(c.type, src.data(), ours.data(), kN);
      for (int64_t i = 0; i < kN; ++i) {
        uint32_t a, b;
        std::memcpy(&a, &theirs[size_t(i)], 4);
        std::memcpy(&b, &ours[size_t(i)], 4);
        if (a != b && !(std::isnan(theirs[size_t(i)]) && std::isnan(ours[size_t(i)]))) ++differing;
      }
    }
    std::printf("%-7s %lld floats, %lld differ\n", pagoda::format::ggml_type_name(c.type).data(),
                static_cast<long long>(kN) * kRounds, static_cast<long long>(differing));
    failed += differing != 0;
  }
  return failed == 0 ? 0 : 1;
}
