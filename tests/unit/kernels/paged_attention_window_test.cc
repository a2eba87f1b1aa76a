// paged_attention's family options (kernels/attention_args.h): window (a sliding window: each query sees only the
// last `window` positions of its own context) and softcap (Gemma 2's s -> cap * tanh(s / cap) on the scaled scores),
// against the direct softmax in double, f32 and int8 caches, at every level: groups of 4 query heads take the
// keys-in-lanes kernel, groups of 12 the heads-in-lanes one (AVX2 and up); the last test covers every group size's
// kernel; sinks (gpt-oss) join each head's denominator. A work item of several queries gives each
// query the bits of its own single-query item, windows included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/kv_int8.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

struct WindowCase {
  int32_t head_dim, group, block_size, ctx, window, num_queries;
  float softcap;
  bool sinks = false;  // a sink logit per query head (gpt-oss)
};

// One KV head of `ctx` positions in shuffled blocks; the queries' outputs against the definition's, and each query's
// bits against its own work item's.
void check_case(const KernelTable& kt, const WindowCase& c, bool int8, std::mt19937& rng) {
  const int32_t num_blocks = (c.ctx + c.block_size - 1) / c.block_size + 2;
  const size_t slots = size_t(num_blocks) * size_t(c.block_size), hd = size_t(c.head_dim);
  const size_t q_stride = size_t(c.group) * hd;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(slots * hd), v(slots * hd), q(size_t(c.num_queries) * q_stride);
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  for (float& x : q) x = dist(rng) * 3.0f;  // scores large enough that the cap bites
  // Sinks around the scores' range: some outweigh every position, some weigh next to nothing.
  std::vector<float> sinks(size_t(c.group));
  for (float& x : sinks) x = dist(rng) * 4.0f;
  std::vector<int8_t> k8(k.size()), v8(v.size());
  std::vector<float> ks(slots), vs(slots);
  for (size_t s = 0; s < slots; ++s) {
    ks[s] = quantize_kv_int8(&k[s * hd], c.head_dim, &k8[s * hd]);
    vs[s] = quantize_kv_int8(&v[s * hd], c.head_dim, &v8[s * hd]);
  }
  std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  const float scale = 1.0f / std::sqrt(float(c.head_dim));

  auto args = [&](const float* qp, float* out, int32_t num_ctx, int32_t num_queries) {
    AttentionArgs a;
    a.q = qp;
    a.out = out;
    a.num_q_heads = c.group;
    a.head_dim = c.head_dim;
    a.num_ctx = num_ctx;
    a.num_queries = num_queries;
    a.q_stride = int64_t(q_stride);
    a.window = c.window;
    a.blocks = blocks.data();
    a.block_size = c.block_size;
    a.scale = scale;
    a.softcap = c.softcap;
    a.sinks = c.sinks ? sinks.data() : nullptr;
    a.k_type = a.v_type = int8 ? KvDType::kInt8 : KvDType::kF32;
    a.k_row_bytes = a.v_row_bytes = kv_row_bytes(a.k_type, c.head_dim);
    if (int8) {
      a.k = reinterpret_cast<const uint8_t*>(k8.data()), a.v = reinterpret_cast<const uint8_t*>(v8.data());
      a.k_scale = ks.data(), a.v_scale = vs.data(), a.scale_stride = 1;
    } else {
      a.k = reinterpret_cast<const uint8_t*>(k.data()), a.v = reinterpret_cast<const uint8_t*>(v.data());
    }
    return a;
  };
  std::vector<float> together(q.size(), NAN), alone(q.size(), NAN);
  kt.paged_attention(args(q.data(), together.data(), c.ctx, c.num_queries));

  auto value = [&](bool is_k, int64_t slot, size_t i) -> double {
    const size_t off = size_t(slot) * hd + i;
    if (!int8) return is_k ? k[off] : v[off];
    return is_k ? double(k8[off]) * ks[size_t(slot)] : double(v8[off]) * vs[size_t(slot)];
  };
  auto slot_of = [&](int32_t j) { return int64_t(blocks[size_t(j / c.block_size)]) * c.block_size + j % c.block_size; };
  for (int32_t qi = 0; qi < c.num_queries; ++qi) {
    const int32_t ctx = c.ctx - (c.num_queries - 1 - qi);
    const int32_t begin = c.window > 0 && ctx > c.window ? ctx - c.window : 0;
    const float* qq = q.data() + size_t(qi) * q_stride;
    const float* got = together.data() + size_t(qi) * q_stride;
    if (c.num_queries > 1) {
      float* own = alone.data() + size_t(qi) * q_stride;
      kt.paged_attention(args(qq, own, ctx, 1));
      ASSERT_EQ(std::memcmp(got, own, q_stride * sizeof(float)), 0)
          << isa_name(kt.isa) << " query " << qi << " of " << c.num_queries << " ctx " << ctx << " window " << c.window
          << " group " << c.group << (int8 ? " int8" : " f32");
    }
    for (int32_t h = 0; h < c.group; ++h) {
      std::vector<double> s;
      for (int32_t j = begin; j < ctx; ++j) {
        double d = 0.0;
        for (size_t i = 0; i < hd; ++i) d += double(qq[size_t(h) * hd + i]) * value(true, slot_of(j), i);
        d *= scale;
        if (c.softcap > 0.0f) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0.0;
      for (double& x : s) sum += (x = std::exp(x - m));
      if (c.sinks) sum += std::exp(double(sinks[size_t(h)]) - m);
      for (size_t i = 0; i < hd; ++i) {
        double o = 0.0;
        for (int32_t j = begin; j < ctx; ++j) o += s[size_t(j - begin)] / sum * value(false, slot_of(j), i);
        ASSERT_NEAR(got[size_t(h) * hd + i], o, 1e-5 * (1.0 + std::fabs(o)))
            << isa_name(kt.isa) << " head_dim " << c.head_dim << " group " << c.group << " block " << c.block_size
            << " ctx " << ctx << " window " << c.window << " softcap " << c.softcap << (int8 ? " int8" : "")
            << (c.sinks ? " sinks" : "")
            << " query " << qi << " head " << h << " at " << i;
      }
    }
  }
}

// Every level, scalar included (each level's kernels against the definition, not against one another).
class PagedAttentionWindowTest : public SimdLevelTest {};
INSTANTIATE_TEST_SUITE_P(Isa, PagedAttentionWindowTest, ::testing::ValuesIn(kAllLevels), simd_level_name);

TEST_P(PagedAttentionWindowTest, PositionsBeforeTheWindowAreNotSeen) {
  std::mt19937 rng(21);
  for (int32_t group : {4, 12})
    for (int32_t block_size : {1, 16})
      for (int32_t ctx : {1, 17, 33, 100})
        for (int32_t window : {1, 5, 40})
          for (bool int8 : {false, true}) check_case(*simd_, {64, group, block_size, ctx, window, 1, 0.0f}, int8, rng);
}

TEST_P(PagedAttentionWindowTest, SoftcapCapsTheScaledScores) {
  std::mt19937 rng(22);
  for (int32_t group : {2, 12})
    for (float softcap : {50.0f, 1.5f})
      for (int32_t ctx : {1, 17, 70})
        for (bool int8 : {false, true}) check_case(*simd_, {32, group, 16, ctx, ctx / 2, 1, softcap}, int8, rng);
}

// Windows whose starts fall in different tiles for the queries of one item (window 31 around the 32-position
// tiles), and the cap, over items of 2 to 4 queries.
TEST_P(PagedAttentionWindowTest, ConsecutiveQueriesGiveEachTheBitsOfItsOwnItem) {
  std::mt19937 rng(23);
  for (int32_t group : {4, 12})
    for (int32_t num_queries : {2, 3, 4})
      for (int32_t ctx : {num_queries, 34, 65, 97})
        for (int32_t window : {0, 3, 31})
          for (bool int8 : {false, true}) {
            const float softcap = window == 3 ? 20.0f : 0.0f;
            check_case(*simd_, {24, group, 16, ctx, window, num_queries, softcap}, int8, rng);
          }
}

// Every kernel each level picks by group size (AVX2: keys in lanes below 8 heads, heads in lanes from 8; AVX-512: keys
// in lanes below 8, 8 heads in a ymm, more in a zmm, 32 as two passes of 16) at the bundled model's head size (8),
// TinyLlama's (64), 80 and 128, with a window, a cap, int8 K/V and items of several queries (prefill).
TEST_P(PagedAttentionWindowTest, EveryGroupSizeAndHeadSizeHonoursWindowCapAndInt8) {
  std::mt19937 rng(24);
  for (int32_t group : {1, 3, 8, 9, 16, 32})
    for (int32_t head_dim : {8, 64, 80, 128})
      for (int32_t num_queries : {1, 3})
        for (bool int8 : {false, true}) {
          check_case(*simd_, {head_dim, group, 16, 70, 0, num_queries, 0.0f}, int8, rng);
          check_case(*simd_, {head_dim, group, 4, 45, 33, num_queries, 30.0f}, int8, rng);
        }
}

// The small-heads kernels (head_dim <= 8, groups under 8; AVX-512 in pairs of heads over 256-position chunks, AVX2
// in 64) across chunk boundaries: contexts just past a chunk and several chunks long, windows that start inside a
// chunk, odd head sizes and groups (a pair's second head missing), queries that straddle a boundary.
TEST_P(PagedAttentionWindowTest, SmallHeadsAcrossChunks) {
  std::mt19937 rng(25);
  for (int32_t head_dim : {5, 8})
    for (int32_t group : {1, 2, 7})
      for (int32_t ctx : {256, 257, 300, 520})
        for (int32_t num_queries : {1, 6})
          for (bool int8 : {false, true}) {
            check_case(*simd_, {head_dim, group, 16, ctx, 0, num_queries, 0.0f}, int8, rng);
            check_case(*simd_, {head_dim, group, 16, ctx, 250, num_queries, 25.0f}, int8, rng);
          }
}

// Attention sinks (gpt-oss) in every kernel each level picks: groups of 1 to 32 heads, small heads (the pair and
// 8-lane forms) and large, with windows, a cap, int8 K/V and items of several queries, which must still give each
// query its own item's bits.
TEST_P(PagedAttentionWindowTest, SinksJoinEachHeadsDenominator) {
  std::mt19937 rng(26);
  for (int32_t group : {1, 3, 8, 9, 16, 32})
    for (int32_t head_dim : {5, 8, 64})
      for (int32_t num_queries : {1, 3})
        for (bool int8 : {false, true}) {
          check_case(*simd_, {head_dim, group, 16, 70, 0, num_queries, 0.0f, true}, int8, rng);
          check_case(*simd_, {head_dim, group, 4, 300, 128, num_queries, 0.0f, true}, int8, rng);
          check_case(*simd_, {head_dim, group, 16, 2, 0, num_queries > 1 ? 2 : 1, 30.0f, true}, int8, rng);
        }
}

}  // namespace
}  // namespace pagoda::kernels
