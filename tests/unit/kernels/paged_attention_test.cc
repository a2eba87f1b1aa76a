// paged_attention (flash-style, kernels/attention_args.h) against a direct softmax computed in double from the
// same K/V, on random data: ragged context lengths around block edges, grouped-query heads (1, 2, 4 and 20 per
// KV head, the last past the kernel's 16-head pass), block sizes 1/4/16 with shuffled (non-contiguous) block
// tables, f32 and int8 caches; and the AVX2 kernel against the scalar one.
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

// A cache of `num_blocks` blocks holding one layer of `num_kv_heads` heads, with a random block table.
struct Cache {
  int32_t head_dim, num_kv_heads, block_size, num_blocks;
  std::vector<float> k, v;              // f32 [slots][num_kv_heads * head_dim]
  std::vector<int8_t> k8, v8;           // int8 of the same
  std::vector<float> k_scale, v_scale;  // [slots][num_kv_heads]
  std::vector<int32_t> blocks;          // logical -> physical, shuffled

  Cache(int32_t hd, int32_t kvh, int32_t bs, int32_t ctx, std::mt19937& rng)
      : head_dim(hd), num_kv_heads(kvh), block_size(bs), num_blocks((ctx + bs - 1) / bs + 3) {
    const size_t slots = size_t(num_blocks) * size_t(bs), row = size_t(kvh) * size_t(hd);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    k.resize(slots * row);
    v.resize(slots * row);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    k8.resize(k.size());
    v8.resize(v.size());
    k_scale.resize(slots * size_t(kvh));
    v_scale.resize(slots * size_t(kvh));
    for (size_t s = 0; s < slots; ++s)
      for (size_t h = 0; h < size_t(kvh); ++h) {
        const size_t off = s * row + h * size_t(hd);
        k_scale[s * size_t(kvh) + h] = quantize_kv_int8(&k[off], hd, &k8[off]);
        v_scale[s * size_t(kvh) + h] = quantize_kv_int8(&v[off], hd, &v8[off]);
      }
    blocks.resize(size_t(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
  }

  AttentionArgs args(const float* q, float* out, int32_t group, int32_t kv_head, int32_t ctx, bool int8) const {
    AttentionArgs a;
    a.q = q;
    a.out = out;
    a.num_q_heads = group;
    a.head_dim = head_dim;
    a.num_ctx = ctx;
    a.blocks = blocks.data();
    a.block_size = block_size;
    a.scale = 1.0f / std::sqrt(float(head_dim));
    a.row_stride = int64_t(num_kv_heads) * head_dim;
    const int64_t off = int64_t(kv_head) * head_dim;
    if (int8) {
      a.k8 = k8.data() + off;
      a.v8 = v8.data() + off;
      a.k_scale = k_scale.data() + kv_head;
      a.v_scale = v_scale.data() + kv_head;
      a.scale_stride = num_kv_heads;
    } else {
      a.k = k.data() + off;
      a.v = v.data() + off;
    }
    return a;
  }

  // The definition: softmax(q.K / sqrt(d)) V over positions 0..ctx-1, in double, from f32 or dequantized int8.
  std::vector<float> reference(const float* q, int32_t group, int32_t kv_head, int32_t ctx, bool int8) const {
    const size_t row = size_t(num_kv_heads) * size_t(head_dim);
    auto value = [&](bool is_k, int64_t slot, int32_t i) -> double {
      const size_t off = size_t(slot) * row + size_t(kv_head) * size_t(head_dim) + size_t(i);
      if (!int8) return is_k ? k[off] : v[off];
      const size_t sc = size_t(slot) * size_t(num_kv_heads) + size_t(kv_head);
      return is_k ? double(k8[off]) * k_scale[sc] : double(v8[off]) * v_scale[sc];
    };
    std::vector<float> out(size_t(group) * size_t(head_dim));
    for (int32_t h = 0; h < group; ++h) {
      std::vector<double> s(static_cast<size_t>(ctx));
      for (int32_t j = 0; j < ctx; ++j) {
        const int64_t slot = int64_t(blocks[size_t(j / block_size)]) * block_size + j % block_size;
        double d = 0.0;
        for (int32_t i = 0; i < head_dim; ++i) d += double(q[h * head_dim + i]) * value(true, slot, i);
        s[size_t(j)] = d / std::sqrt(double(head_dim));
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0.0;
      for (double& x : s) sum += (x = std::exp(x - m));
      for (int32_t i = 0; i < head_dim; ++i) {
        double o = 0.0;
        for (int32_t j = 0; j < ctx; ++j) {
          const int64_t slot = int64_t(blocks[size_t(j / block_size)]) * block_size + j % block_size;
          o += s[size_t(j)] / sum * value(false, slot, i);
        }
        out[size_t(h) * size_t(head_dim) + size_t(i)] = float(o);
      }
    }
    return out;
  }
};

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
}

TEST(PagedAttentionTest, EqualsTheDirectSoftmaxForRaggedLengthsGroupsAndBlockSizes) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<const KernelTable*> tables;
  for (Isa isa : kAllLevels)
    if (const KernelTable* table = kernels_for(isa)) tables.push_back(table);
  int32_t cases = 0;
  for (int32_t head_dim : {8, 17, 64}) {
    for (int32_t group : {1, 2, 4, 20}) {
      for (int32_t block_size : {1, 4, 16}) {
        for (int32_t ctx : {1, 15, 16, 17, 33, 100}) {
          const int32_t num_kv_heads = 2;
          Cache cache(head_dim, num_kv_heads, block_size, ctx, rng);
          std::vector<float> q(size_t(group) * size_t(head_dim));
          for (float& x : q) x = dist(rng) * 2.0f;  // sharp enough that the running max moves
          for (bool int8 : {false, true}) {
            for (const KernelTable* kt : tables) {
              SCOPED_TRACE(testing::Message() << isa_name(kt->isa) << " head_dim " << head_dim << " group " << group
                                              << " block " << block_size << " ctx " << ctx << (int8 ? " int8" : ""));
              const int32_t kv_head = ctx % num_kv_heads;
              std::vector<float> out(q.size(), NAN);
              kt->paged_attention(cache.args(q.data(), out.data(), group, kv_head, ctx, int8));
              expect_near_all(out, cache.reference(q.data(), group, kv_head, ctx, int8), 1e-5f, "vs direct");
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 400);
}

class PagedAttentionSimdTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(PagedAttentionSimdTest);

TEST_P(PagedAttentionSimdTest, EqualsScalar) {
  const KernelTable* simd = simd_;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int32_t group : {4, 8, 16}) {  // keys in lanes; heads in lanes (8 lanes, and 16 from AVX-512)
    for (int32_t head_dim : {1, 7, 8, 9, 31, 64, 80, 128}) {
      for (int32_t ctx : {1, 31, 32, 33, 257}) {
        SCOPED_TRACE(testing::Message() << "group " << group << " head_dim " << head_dim << " ctx " << ctx);
        Cache cache(head_dim, 1, 16, ctx, rng);
        std::vector<float> q(size_t(group) * size_t(head_dim));
        for (float& x : q) x = dist(rng);
        for (bool int8 : {false, true}) {
          std::vector<float> a(q.size()), b(q.size());
          ref::paged_attention(cache.args(q.data(), a.data(), group, 0, ctx, int8));
          simd->paged_attention(cache.args(q.data(), b.data(), group, 0, ctx, int8));
          expect_near_all(b, a, 1e-5f, int8 ? "int8" : "f32");
        }
      }
    }
  }
}

// A work item of several consecutive queries (prefill) gives each query the bits of its own single-query work item,
// at every level, and those match the direct softmax of its own causal context.
TEST(PagedAttentionTest, ConsecutiveQueriesGiveEachTheBitsOfItsOwnItem) {
  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (Isa isa : kAllLevels) {
    const KernelTable* kt = kernels_for(isa);
    if (kt == nullptr) continue;
    // Head sizes 8 and 16 with groups under 8 take the small-heads kernel (up to 16 / group queries a pass: 9 and 17
    // queries take several passes; 150 positions three chunks). Larger heads in groups under 8 take the query-block
    // loop (32 / group queries a block over copied K/V tiles: 40 queries take two blocks at group 1, three at 2).
    for (int32_t group : {1, 2, 12}) {
      for (int32_t head_dim : {8, 16, 17, 64, 128}) {
        for (int32_t num_queries : {2, 4, 9, 17, 40}) {
          for (int32_t ctx : {num_queries, 33, 70, 150}) {
            if (ctx < num_queries) continue;
            SCOPED_TRACE(testing::Message() << isa_name(isa) << " group " << group << " head_dim " << head_dim
                                            << " queries " << num_queries << " ctx " << ctx);
            Cache cache(head_dim, 2, 16, ctx, rng);
            const int64_t q_stride = int64_t(2) * group * head_dim;  // two KV heads' worth of query heads per token
            std::vector<float> q(size_t(num_queries * q_stride));
            for (float& x : q) x = dist(rng) * 2.0f;
            for (bool int8 : {false, true}) {
              std::vector<float> together(q.size(), NAN), alone(q.size(), NAN);
              AttentionArgs a = cache.args(q.data(), together.data(), group, 1, ctx, int8);
              a.num_queries = num_queries;
              a.q_stride = q_stride;
              kt->paged_attention(a);
              for (int32_t i = 0; i < num_queries; ++i) {
                const int32_t own_ctx = ctx - (num_queries - 1 - i);
                kt->paged_attention(
                    cache.args(q.data() + i * q_stride, alone.data() + i * q_stride, group, 1, own_ctx, int8));
                const size_t n = size_t(group) * size_t(head_dim);
                ASSERT_EQ(std::memcmp(together.data() + i * q_stride, alone.data() + i * q_stride, n * sizeof(float)),
                          0)
                    << "query " << i << (int8 ? " int8" : " f32");
                const std::vector<float> want = cache.reference(q.data() + i * q_stride, group, 1, own_ctx, int8);
                for (size_t k = 0; k < n; ++k)
                  ASSERT_NEAR(together[i * q_stride + k], want[k], 1e-5f * (1.0f + std::fabs(want[k])));
              }
            }
          }
        }
      }
    }
  }
}

// What INT8 costs: the attention output over int8 K/V stays within a few percent of the f32 output's scale.
TEST(PagedAttentionTest, Int8CacheStaysCloseToF32) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const KernelTable& kt = best_kernels();
  double max_err = 0.0, max_ref = 0.0;
  for (int32_t ctx : {16, 100, 500}) {
    Cache cache(64, 1, 16, ctx, rng);
    std::vector<float> q(size_t(64));
    for (float& x : q) x = dist(rng);
    std::vector<float> f(q.size()), i8(q.size());
    kt.paged_attention(cache.args(q.data(), f.data(), 1, 0, ctx, false));
    kt.paged_attention(cache.args(q.data(), i8.data(), 1, 0, ctx, true));
    for (size_t i = 0; i < q.size(); ++i) {
      max_err = std::max(max_err, double(std::fabs(f[i] - i8[i])));
      max_ref = std::max(max_ref, double(std::fabs(f[i])));
    }
  }
  EXPECT_LT(max_err, 0.03 * max_ref) << "max |f32 - int8| " << max_err << " of max |f32| " << max_ref;
}

}  // namespace
}  // namespace pagoda::kernels
