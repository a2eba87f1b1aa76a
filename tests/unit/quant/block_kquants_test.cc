// K-quant dequantization (Q2_K ... Q6_K, Q8_K) against values computed from each format's definition: the test packs
// blocks itself from logical values (quants, sub-block scales and mins, super-block d/dmin), so the only code under
// test is the unpacking and the arithmetic, and expects ggml's f32 operations bit for bit. Edge cases: the largest
// scales and mins, negative and subnormal d, every sub-block with a scale of its own, quants at both ends.
#include "quant/block_kquants.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "ggml_block_test_util.h"

namespace pagoda::quant {
namespace {

using testing::expect_same_bits;
using testing::f32_bits;
using testing::pack_nibbles;

// ---- Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scale and min each.

// Packs 6-bit scale/min pairs the way the format defines them: sub-blocks 0-3 in the low six bits of bytes 0-3
// (scales) and 4-7 (mins); sub-blocks 4-7 as nibbles of bytes 8-11 (scale low, min high) with their top two bits
// in the top bits of bytes 0-3 (scales) and 4-7 (mins).
void pack_scale_min(const int sc[8], const int mn[8], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 4; ++j) {
    out[j] = uint8_t(sc[j] | (sc[j + 4] >> 4) << 6);
    out[j + 4] = uint8_t(mn[j] | (mn[j + 4] >> 4) << 6);
    out[j + 8] = uint8_t((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
  }
}

struct Q45Logical {
  uint16_t d, dmin;
  int sc[8], mn[8];
  int q[256];
};

Q45Logical random_q45(std::mt19937& rng, int q_max, uint16_t d, uint16_t dmin) {
  Q45Logical v{};
  v.d = d;
  v.dmin = dmin;
  for (int s = 0; s < 8; ++s) {
    v.sc[s] = int(rng() % 64);
    v.mn[s] = int(rng() % 64);
  }
  for (int i = 0; i < 256; ++i) v.q[i] = int(rng() % uint32_t(q_max + 1));
  return v;
}

std::vector<float> expected_q45(const Q45Logical& v) {
  std::vector<float> y(256);
  const float d = fp16_to_float(v.d), dmin = fp16_to_float(v.dmin);
  for (int i = 0; i < 256; ++i) {
    const float ds = d * float(v.sc[i / 32]);
    const float ms = dmin * float(v.mn[i / 32]);
    y[size_t(i)] = ds * float(v.q[i]) - ms;
  }
  return y;
}

BlockQ4_K pack_q4_k(const Q45Logical& v) {
  BlockQ4_K b{};
  b.d = v.d;
  b.dmin = v.dmin;
  pack_scale_min(v.sc, v.mn, b.scales);
  // Value i: chunk p = i / 64 of 32 bytes; the first 32 values of a chunk are low nibbles, the next 32 high ones.
  for (int i = 0; i < 256; ++i) b.qs[32 * (i / 64) + i % 32] |= uint8_t(v.q[i] << (i % 64 >= 32 ? 4 : 0));
  return b;
}

BlockQ5_K pack_q5_k(const Q45Logical& v) {
  BlockQ5_K b{};
  b.d = v.d;
  b.dmin = v.dmin;
  pack_scale_min(v.sc, v.mn, b.scales);
  for (int i = 0; i < 256; ++i) {
    b.qs[32 * (i / 64) + i % 32] |= uint8_t((v.q[i] & 15) << (i % 64 >= 32 ? 4 : 0));
    b.qh[i % 32] |= uint8_t((v.q[i] >> 4) << (i / 32));  // sub-block s = i / 32 owns bit s
  }
  return b;
}

TEST(BlockKQuantsTest, Layouts) {
  EXPECT_EQ(sizeof(BlockQ2_K), 84u);
  EXPECT_EQ(sizeof(BlockQ3_K), 110u);
  EXPECT_EQ(sizeof(BlockQ4_K), 144u);
  EXPECT_EQ(sizeof(BlockQ5_K), 176u);
  EXPECT_EQ(sizeof(BlockQ6_K), 210u);
  EXPECT_EQ(sizeof(BlockQ8_K), 292u);
}

TEST(BlockKQuantsTest, ScaleMinUnpacking) {
  const int sc[8] = {0, 63, 1, 62, 33, 17, 48, 63}, mn[8] = {63, 0, 2, 61, 15, 63, 32, 0};
  uint8_t packed[12];
  pack_scale_min(sc, mn, packed);
  for (int j = 0; j < 8; ++j) {
    uint8_t s = 0, m = 0;
    kquant_scale_min(packed, j, &s, &m);
    EXPECT_EQ(s, sc[j]) << j;
    EXPECT_EQ(m, mn[j]) << j;
  }
}

TEST(BlockKQuantsTest, Q4_KHandBuilt) {
  // Sub-block s has scale s + 1 and min 2s, d = 1, dmin = 0.5, q = i % 16: value = (s + 1) * q - s.
  Q45Logical v{};
  v.d = 0x3c00;
  v.dmin = 0x3800;
  for (int s = 0; s < 8; ++s) {
    v.sc[s] = s + 1;
    v.mn[s] = 2 * s;
  }
  for (int i = 0; i < 256; ++i) v.q[i] = i % 16;
  const BlockQ4_K b = pack_q4_k(v);
  std::vector<float> y(256);
  dequantize_row_q4_K(&b, y.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[size_t(i)], float((i / 32 + 1) * (i % 16) - i / 32)) << i;
}

TEST(BlockKQuantsTest, Q4_KAndQ5_KRandomAndEdges) {
  std::mt19937 rng(41);
  for (uint16_t d : testing::kFp16Scales) {
    for (uint16_t dmin : {uint16_t(0x3c00), uint16_t(0xb800), uint16_t(0x0000), uint16_t(0x7bff)}) {
      for (const bool extremes : {false, true}) {
        Q45Logical v4 = random_q45(rng, 15, d, dmin), v5 = random_q45(rng, 31, d, dmin);
        if (extremes) {  // the largest scales and mins, quants at both ends
          for (int s = 0; s < 8; ++s) v4.sc[s] = v4.mn[s] = v5.sc[s] = v5.mn[s] = 63;
          for (int i = 0; i < 256; ++i) {
            v4.q[i] = i % 2 ? 15 : 0;
            v5.q[i] = i % 3 ? 31 : 0;
          }
        }
        const Q45Logical second = random_q45(rng, 15, 0x3c00, 0x3c00);  // a row of two super-blocks
        const BlockQ4_K b4[2] = {pack_q4_k(v4), pack_q4_k(second)};
        std::vector<float> y(512);
        dequantize_row_q4_K(b4, y.data(), 512);
        std::vector<float> want = expected_q45(v4);
        const std::vector<float> want_second = expected_q45(second);
        want.insert(want.end(), want_second.begin(), want_second.end());
        expect_same_bits(y, want);
        const BlockQ5_K b5 = pack_q5_k(v5);
        std::vector<float> y5(256);
        dequantize_row_q5_K(&b5, y5.data(), 256);
        expect_same_bits(y5, expected_q45(v5));
      }
    }
  }
}

// ---- Q2_K: 16 sub-blocks of 16, 4-bit scale and min; Q3_K: 16 sub-blocks of 16, 6-bit signed scales.

// Position of value i in Q2_K/Q3_K's 2-bit array: half h = i / 128 owns 32 bytes; within it, bit pair g = (i % 128)
// / 32 and column l = i % 32.
int q2_byte(int i) { return 32 * (i / 128) + i % 32; }
int q2_shift(int i) { return 2 * ((i % 128) / 32); }

TEST(BlockKQuantsTest, Q2_K) {
  std::mt19937 rng(2);
  for (uint16_t d : testing::kFp16Scales) {
    for (const bool extremes : {false, true}) {
      BlockQ2_K b{};
      b.d = d;
      b.dmin = extremes ? uint16_t(0xc000) : uint16_t(0x3555);
      int sc[16], mn[16], q[256];
      for (int s = 0; s < 16; ++s) {
        sc[s] = extremes ? 15 : int(rng() % 16);
        mn[s] = extremes ? 15 : int(rng() % 16);
        b.scales[s] = uint8_t(sc[s] | mn[s] << 4);
      }
      for (int i = 0; i < 256; ++i) {
        q[i] = extremes ? 3 * (i % 2) : int(rng() % 4);
        b.qs[q2_byte(i)] |= uint8_t(q[i] << q2_shift(i));
      }
      std::vector<float> y(256), want(256);
      dequantize_row_q2_K(&b, y.data(), 256);
      for (int i = 0; i < 256; ++i) {
        const float dl = fp16_to_float(b.d) * float(sc[i / 16]);
        const float ml = fp16_to_float(b.dmin) * float(mn[i / 16]);
        want[size_t(i)] = dl * float(q[i]) - ml;
      }
      expect_same_bits(y, want);
    }
  }
}

TEST(BlockKQuantsTest, Q3_K) {
  std::mt19937 rng(3);
  for (uint16_t d : testing::kFp16Scales) {
    for (const bool extremes : {false, true}) {
      BlockQ3_K b{};
      b.d = d;
      int sc[16], q[256];  // sc: the signed scale -32 .. 31; q: the signed quant -4 .. 3
      for (int s = 0; s < 16; ++s) {
        sc[s] = extremes ? (s % 2 ? 31 : -32) : int(rng() % 64) - 32;
        const int u = sc[s] + 32;  // stored biased, 6 bits: low nibble then two high bits
        b.scales[s % 8] |= uint8_t((u & 15) << (4 * (s / 8)));
        b.scales[8 + s % 4] |= uint8_t((u >> 4) << (2 * (s / 4)));
      }
      for (int i = 0; i < 256; ++i) {
        q[i] = extremes ? (i % 2 ? 3 : -4) : int(rng() % 8) - 4;
        const int u = q[i] + 4;  // low two bits in qs, the third in hmask (set = no -4)
        b.qs[q2_byte(i)] |= uint8_t((u & 3) << q2_shift(i));
        b.hmask[i % 32] |= uint8_t((u >> 2) << (i / 32));
      }
      std::vector<float> y(256), want(256);
      dequantize_row_q3_K(&b, y.data(), 256);
      for (int i = 0; i < 256; ++i) want[size_t(i)] = (fp16_to_float(b.d) * float(sc[i / 16])) * float(q[i]);
      expect_same_bits(y, want);
    }
  }
}

// ---- Q6_K: 16 sub-blocks of 16, int8 scales, 6-bit quants biased by 32.

TEST(BlockKQuantsTest, Q6_K) {
  std::mt19937 rng(6);
  for (uint16_t d : testing::kFp16Scales) {
    for (const bool extremes : {false, true}) {
      BlockQ6_K b{};
      b.d = d;
      int q[256];  // -32 .. 31
      for (int s = 0; s < 16; ++s) b.scales[s] = int8_t(extremes ? (s % 2 ? 127 : -128) : int(rng() % 256) - 128);
      for (int i = 0; i < 256; ++i) {
        q[i] = extremes ? (i % 2 ? 31 : -32) : int(rng() % 64) - 32;
        const int u = q[i] + 32;
        // Half h = i / 128, quarter k = (i % 128) / 32, column l = i % 32: quarters 0 and 2 use ql[64h + l], 1 and 3
        // ql[64h + 32 + l] (0, 1 low nibbles; 2, 3 high ones); the top two bits are bit pair k of qh[32h + l].
        const int h = i / 128, k = (i % 128) / 32, l = i % 32;
        b.ql[64 * h + 32 * (k % 2) + l] |= uint8_t((u & 15) << (4 * (k / 2)));
        b.qh[32 * h + l] |= uint8_t((u >> 4) << (2 * k));
      }
      std::vector<float> y(256), want(256);
      dequantize_row_q6_K(&b, y.data(), 256);
      for (int i = 0; i < 256; ++i) want[size_t(i)] = fp16_to_float(b.d) * float(b.scales[i / 16]) * float(q[i]);
      expect_same_bits(y, want);
    }
  }
}

TEST(BlockKQuantsTest, Q8_K) {
  BlockQ8_K b[2]{};
  b[0].d = -0.03125f;
  b[1].d = 3.0e-39f;  // a subnormal scale stays exact per product
  for (int j = 0; j < 256; ++j) {
    b[0].qs[j] = int8_t(j - 128);
    b[1].qs[j] = int8_t(127 - j);
  }
  std::vector<float> y(512);
  dequantize_row_q8_K(b, y.data(), 512);
  for (int j = 0; j < 256; ++j) {
    EXPECT_EQ(f32_bits(y[size_t(j)]), f32_bits(-0.03125f * float(j - 128))) << j;
    EXPECT_EQ(f32_bits(y[size_t(256 + j)]), f32_bits(3.0e-39f * float(127 - j))) << j;
  }
}

}  // namespace
}  // namespace pagoda::quant
