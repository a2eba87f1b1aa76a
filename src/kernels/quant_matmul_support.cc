// Per-thread activation scratch and shape checks for the quantized matmuls (see quant_matmul_support.h).
#include "kernels/quant_matmul_support.h"

#include <cstring>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/packed_activations.h"

namespace pagoda::kernels {

void check_quant_row_length(int64_t num_in) {
  PAGODA_CHECK(num_in > 0 && num_in % quant::BlockQ8_0::kNumValues == 0,
               "quantized matmuls need rows of whole 32-value blocks, got num_in = {}; the loader must keep such "
               "tensors in f32/f16",
               num_in);
}

void check_group_row_length(int64_t num_in, int64_t group) {
  PAGODA_CHECK(num_in > 0 && num_in % group == 0,
               "AWQ INT4 matmuls need rows of whole {}-value groups, got num_in = {}; the quantizer must pick a group "
               "that divides the row",
               group, num_in);
}

void check_int8_row_length(int64_t num_in) {
  PAGODA_CHECK(num_in > 0 && num_in <= quant::kMaxInt8RowLength,
               "INT8 matmuls take rows of 1 to {} values (int32 dot products), got num_in = {}",
               quant::kMaxInt8RowLength, num_in);
}

void check_x8_block_shape(int64_t num_out, int64_t num_in, int64_t group_rows) {
  check_quant_row_length(num_in);
  PAGODA_CHECK(num_out >= 0 && num_out % group_rows == 0,
               "{}-row interleaved matmuls compute whole groups of {} rows, got num_out = {}", group_rows, group_rows,
               num_out);
}

void check_kquant_shape(int64_t num_out, int64_t num_in, int64_t group_rows) {
  PAGODA_CHECK(num_in > 0 && num_in % 256 == 0 && num_out >= 0 && num_out % group_rows == 0,
               "K-quant matmuls take rows of whole 256-value super-blocks and groups of {} rows, got {} x {}",
               group_rows, num_out, num_in);
}

void check_codebook_shape(int64_t num_out, int64_t num_in, int64_t block_values, int64_t group_rows) {
  PAGODA_CHECK(num_in > 0 && num_in % block_values == 0 && num_out >= 0 && num_out % group_rows == 0,
               "4-bit codebook matmuls take rows of whole {}-value blocks and groups of {} rows, got {} x {}",
               block_values, group_rows, num_out, num_in);
}

void check_int8x8_shape(int64_t num_out, int64_t num_in, int64_t group_rows) {
  check_int8_row_length(num_in);
  PAGODA_CHECK(num_out >= 0 && num_out % group_rows == 0 && num_in % 4 == 0,
               "interleaved INT8 matmuls compute whole groups of {} rows of whole 4-value words, got {} x {}",
               group_rows, num_out, num_in);
}

Q8BlockSums* activation_sums_scratch(int64_t num_blocks) {
  PAGODA_CHECK(num_blocks >= 0, "num_blocks = {}", num_blocks);
  thread_local std::vector<Q8BlockSums> scratch;  // grow-only
  if (scratch.size() < size_t(num_blocks)) scratch.resize(size_t(num_blocks));
  return scratch.data();
}

void* packed_activation_scratch(int64_t bytes) {
  PAGODA_CHECK(bytes >= 0, "bytes = {}", bytes);
  struct alignas(64) Line {
    uint8_t bytes[64];
  };
  thread_local std::vector<Line> scratch;  // grow-only
  const size_t num_lines = size_t(bytes + 63) / 64;
  if (scratch.size() < num_lines) scratch.resize(num_lines);
  return scratch.data();
}

Int8Activations activation_scratch_int8(int64_t num_tokens, int64_t num_in) {
  check_int8_row_length(num_in);
  PAGODA_CHECK(num_tokens >= 0, "num_tokens = {}", num_tokens);
  thread_local std::vector<int8_t> values;  // int8 [num_tokens, num_in], grow-only
  thread_local std::vector<float> scales;   // f32 [num_tokens], grow-only
  if (values.size() < size_t(num_tokens * num_in)) values.resize(size_t(num_tokens * num_in));
  if (scales.size() < size_t(num_tokens)) scales.resize(size_t(num_tokens));
  return Int8Activations{values.data(), scales.data()};
}

quant::BlockQ8_0* activation_scratch_q8_0(int64_t num_tokens, int64_t num_in) {
  check_quant_row_length(num_in);
  PAGODA_CHECK(num_tokens >= 0, "num_tokens = {}", num_tokens);
  thread_local std::vector<quant::BlockQ8_0> scratch;  // Q8_0 [num_tokens, num_in / 32], grow-only
  const size_t num_blocks = size_t(num_tokens) * size_t(num_in / quant::BlockQ8_0::kNumValues);
  if (scratch.size() < num_blocks) scratch.resize(num_blocks);
  return scratch.data();
}

const quant::BlockQ8_0* quantize_activations_q8_0(QuantizeRowQ8_0Fn quantize_row, const float* x, int64_t num_in,
                                                  int64_t num_tokens) {
  quant::BlockQ8_0* xq = activation_scratch_q8_0(num_tokens, num_in);
  const int64_t num_blocks = num_in / quant::BlockQ8_0::kNumValues;
  for (int64_t t = 0; t < num_tokens; ++t) quantize_row(x + t * num_in, xq + t * num_blocks, num_in);
  return xq;
}

const quant::BlockQ8_K* quantize_activations_q8_K(QuantizeRowQ8_KFn quantize_row, const float* x, int64_t num_in,
                                                  int64_t num_tokens) {
  PAGODA_CHECK(num_in > 0 && num_in % quant::kQK_K == 0,
               "q8_K activations need whole 256-value blocks, got num_in = {}", num_in);
  PAGODA_CHECK(num_tokens >= 0, "num_tokens = {}", num_tokens);
  thread_local std::vector<quant::BlockQ8_K> scratch;  // q8_K [num_tokens, num_in / 256], grow-only
  const int64_t num_blocks = num_in / quant::kQK_K;
  if (scratch.size() < size_t(num_tokens * num_blocks)) scratch.resize(size_t(num_tokens * num_blocks));
  for (int64_t t = 0; t < num_tokens; ++t) quantize_row(x + t * num_in, scratch.data() + t * num_blocks, num_in);
  return scratch.data();
}

Int8Activations quantize_activations_int8(QuantizeRowInt8Fn quantize_row, const float* x, int64_t num_in,
                                          int64_t num_tokens) {
  const Int8Activations xq = activation_scratch_int8(num_tokens, num_in);
  for (int64_t t = 0; t < num_tokens; ++t) xq.scales[t] = quantize_row(x + t * num_in, xq.values + t * num_in, num_in);
  return xq;
}

namespace {

// Both Q8_0 packings: each token's quants at its slot, then the slots' scales, then (kWithStart) each slot's start
// value, start_scale times the block's quant sum.
template <bool kWithStart>
const uint8_t* pack_q8_blocks(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_blocks, int64_t group,
                              int64_t block_bytes, int32_t start_scale) {
  const int64_t num_groups = (num_tokens + group - 1) / group;
  auto* packed = static_cast<uint8_t*>(packed_activation_scratch(num_groups * num_blocks * block_bytes));
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t g = t / group, slot = t % group;
    for (int64_t b = 0; b < num_blocks; ++b) {
      const quant::BlockQ8_0& x = xq[t * num_blocks + b];
      uint8_t* out = packed + (g * num_blocks + b) * block_bytes;
      const float d = fp16_to_float(x.d);
      std::memcpy(out + slot * 32, x.qs, 32);
      std::memcpy(out + group * 32 + slot * 4, &d, 4);
      if constexpr (kWithStart) {
        int32_t sum = 0;
        for (int8_t q : x.qs) sum += q;
        const int32_t start = start_scale * sum;
        std::memcpy(out + group * 36 + slot * 4, &start, 4);
      }
    }
  }
  return packed;
}

}  // namespace

const uint8_t* pack_q8_activations(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_blocks, int64_t group,
                                   int32_t start_scale) {
  return pack_q8_blocks<true>(xq, num_tokens, num_blocks, group, packed_q8_block_bytes(group), start_scale);
}

const uint8_t* pack_q8_codebook_activations(const quant::BlockQ8_0* xq, int64_t num_tokens, int64_t num_blocks,
                                            int64_t group) {
  return pack_q8_blocks<false>(xq, num_tokens, num_blocks, group, packed_q8_codebook_block_bytes(group), 0);
}

const uint8_t* pack_q8_K_activations(const quant::BlockQ8_K* xq, int64_t num_tokens, int64_t num_super,
                                     int64_t group) {
  const int64_t num_groups = (num_tokens + group - 1) / group;
  const int64_t unit_bytes = packed_q8_K_unit_bytes(group);
  auto* packed = static_cast<uint8_t*>(packed_activation_scratch(num_groups * num_super * unit_bytes));
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t g = t / group, slot = t % group;
    for (int64_t b = 0; b < num_super; ++b) {
      const quant::BlockQ8_K& x = xq[t * num_super + b];
      uint8_t* out = packed + (g * num_super + b) * unit_bytes;
      for (int64_t j = 0; j < 8; ++j) std::memcpy(out + (j * group + slot) * 32, x.qs + 32 * j, 32);
      std::memcpy(out + group * 256 + slot * 4, &x.d, 4);
      for (int64_t k = 0; k < 16; ++k) {
        const int32_t sum = x.bsums[k];
        std::memcpy(out + group * 260 + (k * group + slot) * 4, &sum, 4);
      }
    }
  }
  return packed;
}

PackedInt8Activations pack_int8_activations(const int8_t* xq, int64_t num_tokens, int64_t num_in, int64_t group,
                                            int32_t start_scale) {
  PAGODA_CHECK(num_in % 4 == 0, "packed INT8 activations need whole 4-value words, got num_in = {}", num_in);
  const int64_t num_groups = (num_tokens + group - 1) / group;
  const int64_t words_bytes = num_groups * num_in * group;
  auto* packed = static_cast<uint8_t*>(packed_activation_scratch(words_bytes + num_tokens * 4));
  auto* starts = reinterpret_cast<int32_t*>(packed + words_bytes);  // words_bytes is a multiple of 4
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t g = t / group, slot = t % group;
    const int8_t* x = xq + t * num_in;
    int32_t sum = 0;
    for (int64_t i = 0; i < num_in; ++i) sum += x[i];
    starts[t] = start_scale * sum;
    for (int64_t w = 0; w < num_in / 4; ++w)
      std::memcpy(packed + ((g * (num_in / 4) + w) * group + slot) * 4, x + 4 * w, 4);
  }
  return PackedInt8Activations{packed, starts};
}

}  // namespace pagoda::kernels
