// pagoda's reference dequantizers (format/ggml_dequantize.h) against ggml's own dequantize_row_* from the peer's
// libggml-base, on random bytes (so NaN, inf and subnormal scales too): every float must have the same bits (two
// NaNs count as equal). A carried type's super-blocks re-encoded in their carrier (format/ggml_carrier.h) must
// dequantize to ggml's bits too, but for the sign of a zero (the ternary types' d * 0 is -0 for a negative d, where
// q2_K's d * t - d is +0; the kernels multiply integers, in which a zero has no sign), counted apart; the blocks the
// carrier declines are counted, not compared. Built and run by
// dequant_vs_ggml.sh; prints one line per type, exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "format/ggml_carrier.h"
#include "format/ggml_dequantize.h"
#include "quant/block_q7_k.h"

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

namespace {

bool same_bits(float x, float y) {
  uint32_t a, b;
  std::memcpy(&a, &x, 4);
  std::memcpy(&b, &y, 4);
  return a == b || (std::isnan(x) && std::isnan(y));
}

// The carrier's reference dequantizer: its ggml twin's, or pagoda's own Q7_K's.
void dequantize_carrier(pagoda::DType carrier, const void* src, float* dst, int64_t n) {
  using pagoda::format::GgmlType;
  switch (carrier) {
    case pagoda::DType::kQ2_K: pagoda::format::dequantize_ggml_row(GgmlType::kQ2_K, src, dst, n); return;
    case pagoda::DType::kQ6_K: pagoda::format::dequantize_ggml_row(GgmlType::kQ6_K, src, dst, n); return;
    case pagoda::DType::kQ8_0: pagoda::format::dequantize_ggml_row(GgmlType::kQ8_0, src, dst, n); return;
    case pagoda::DType::kQ7_K:
      pagoda::quant::dequantize_row_q7_K(static_cast<const pagoda::quant::BlockQ7_K*>(src), dst, n);
      return;
    default: std::fprintf(stderr, "no dequantizer for carrier %s\n", pagoda::dtype_name(carrier).data()); std::abort();
  }
}

}  // namespace

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
    const auto carrier = pagoda::format::ggml_carrier_type(c.type);
    const int64_t block_values = int64_t(pagoda::format::ggml_block_size(c.type));
    const uint64_t block_bytes = pagoda::format::ggml_row_bytes(c.type, uint64_t(block_values));
    std::vector<uint8_t> carried(carrier ? size_t(pagoda::dtype_row_bytes(*carrier, block_values)) : 0);
    std::vector<float> from_carrier(static_cast<size_t>(block_values));
    int64_t differing = 0, carried_differing = 0, zero_signs = 0, carried_blocks = 0, declined_blocks = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (uint8_t& b : src) b = uint8_t(rng());
      c.ggml(src.data(), theirs.data(), kN);
      pagoda::format::dequantize_ggml_row(c.type, src.data(), ours.data(), kN);
      for (int64_t i = 0; i < kN; ++i) differing += !same_bits(theirs[size_t(i)], ours[size_t(i)]);
      if (!carrier) continue;
      for (int64_t b = 0; b < kN / block_values; ++b) {
        if (!pagoda::format::carry_ggml_row(c.type, src.data() + uint64_t(b) * block_bytes, carried.data(),
                                            block_values)) {
          ++declined_blocks;
          continue;
        }
        ++carried_blocks;
        dequantize_carrier(*carrier, carried.data(), from_carrier.data(), block_values);
        for (int64_t i = 0; i < block_values; ++i) {
          const float want = theirs[size_t(b * block_values + i)], got = from_carrier[size_t(i)];
          if (same_bits(want, got)) continue;
          if (want == 0.0f && got == 0.0f)
            ++zero_signs;
          else
            ++carried_differing;
        }
      }
    }
    std::printf("%-7s %lld floats, %lld differ", pagoda::format::ggml_type_name(c.type).data(),
                static_cast<long long>(kN) * kRounds, static_cast<long long>(differing));
    if (carrier)
      std::printf(
          "; in %s: %lld blocks carried, %lld floats differ, %lld zeros of the other sign (%lld blocks declined)",
          pagoda::dtype_name(*carrier).data(), static_cast<long long>(carried_blocks),
          static_cast<long long>(carried_differing), static_cast<long long>(zero_signs),
          static_cast<long long>(declined_blocks));
    std::printf("\n");
    failed += differing != 0 || carried_differing != 0;
  }
  return failed == 0 ? 0 : 1;
}
