// paged_attention (flash-style, kernels/attention_args.h) against a direct softmax computed in double from the
// same K/V, on random data: ragged context lengths around block edges, grouped-query heads (1, 2, 4 and 20 per
// KV head, the last past the kernel's 16-head pass), block sizes 1/4/16 with shuffled (non-contiguous) block
// tables, caches of every KV type (and K and V of different types); and every SIMD level against the scalar one. An
// item of several KV heads (a decoded token's share of a thread) gives each head the bits of its own item.
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
#include "quant/kv_row.h"
#include "support/simd_levels.h"

namespace pagoda::kernels {
namespace {

// Every KV type, and two mixed pairs (K and V of different types).
const KvDType kAllKvTypes[] = {KvDType::kF32, KvDType::kInt8, KvDType::kF16, KvDType::kBF16, KvDType::kQ8_0,
                               KvDType::kQ4_0};
std::vector<KvCacheTypes> kv_type_cases(int32_t head_dim) {
  std::vector<KvCacheTypes> out;
  for (KvDType t : kAllKvTypes)
    if (head_dim % kv_dtype_block_values(t) == 0) out.emplace_back(t);
  out.emplace_back(KvDType::kF16, KvDType::kInt8);
  if (head_dim % 32 == 0) out.emplace_back(KvDType::kQ8_0, KvDType::kF16);
  return out;
}
std::string types_label(KvCacheTypes t) { return " " + kv_types_name(t); }

// A cache of `num_blocks` blocks holding one layer of `num_kv_heads` heads, with a random block table, in every KV
// type its heads allow (q8_0 and q4_0: heads of a multiple of 32 values).
struct Cache {
  struct Side {
    std::vector<uint8_t> bytes;  // [slots][row_bytes]
    std::vector<float> scale;    // int8: [slots][num_kv_heads]
    std::vector<float> values;   // what the bytes hold, as f32 [slots][num_kv_heads * head_dim]
    int64_t row_bytes = 0;
  };
  int32_t head_dim, num_kv_heads, block_size, num_blocks;
  Side k[6], v[6];              // by KvDType
  std::vector<int32_t> blocks;  // logical -> physical, shuffled

  Cache(int32_t hd, int32_t kvh, int32_t bs, int32_t ctx, std::mt19937& rng)
      : head_dim(hd), num_kv_heads(kvh), block_size(bs), num_blocks((ctx + bs - 1) / bs + 3) {
    const size_t slots = size_t(num_blocks) * size_t(bs), row = size_t(kvh) * size_t(hd);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> kf(slots * row), vf(slots * row);
    for (float& x : kf) x = dist(rng);
    for (float& x : vf) x = dist(rng);
    for (KvDType t : kAllKvTypes) {
      if (hd % kv_dtype_block_values(t) != 0) continue;
      encode(t, kf, k[int(t)]);
      encode(t, vf, v[int(t)]);
    }
    blocks.resize(size_t(num_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
  }

  void encode(KvDType t, const std::vector<float>& x, Side& side) const {
    const size_t row = size_t(num_kv_heads) * size_t(head_dim), slots = x.size() / row;
    side.row_bytes = kv_row_bytes(t, int64_t(row));
    side.bytes.resize(slots * size_t(side.row_bytes));
    side.values.resize(x.size());
    for (size_t s = 0; s < slots; ++s) {
      uint8_t* dst = side.bytes.data() + s * size_t(side.row_bytes);
      if (t == KvDType::kInt8) {
        for (int32_t h = 0; h < num_kv_heads; ++h) {
          const size_t off = s * row + size_t(h) * size_t(head_dim);
          auto* q8 = reinterpret_cast<int8_t*>(dst) + h * head_dim;
          side.scale.push_back(quantize_kv_int8(&x[off], head_dim, q8));
          dequantize_kv_int8(q8, side.scale.back(), head_dim, &side.values[off]);
        }
      } else {
        quantize_kv_row(t, &x[s * row], int32_t(row), dst);
        dequantize_kv_row(t, dst, int32_t(row), &side.values[s * row]);
      }
    }
  }

  AttentionArgs args(const float* q, float* out, int32_t group, int32_t kv_head, int32_t ctx,
                     KvCacheTypes types) const {
    AttentionArgs a;
    a.q = q;
    a.out = out;
    a.num_q_heads = group;
    a.head_dim = head_dim;
    a.num_ctx = ctx;
    a.blocks = blocks.data();
    a.block_size = block_size;
    a.scale = 1.0f / std::sqrt(float(head_dim));
    const Side& ks = k[int(types.k)];
    const Side& vs = v[int(types.v)];
    EXPECT_FALSE(ks.bytes.empty() || vs.bytes.empty()) << "no " << kv_types_name(types) << " cache here";
    a.k_type = types.k;
    a.v_type = types.v;
    a.k_row_bytes = ks.row_bytes;
    a.v_row_bytes = vs.row_bytes;
    a.k = ks.bytes.data() + kv_row_bytes(types.k, int64_t(kv_head) * head_dim);
    a.v = vs.bytes.data() + kv_row_bytes(types.v, int64_t(kv_head) * head_dim);
    if (types.k == KvDType::kInt8) a.k_scale = ks.scale.data() + kv_head;
    if (types.v == KvDType::kInt8) a.v_scale = vs.scale.data() + kv_head;
    a.scale_stride = num_kv_heads;
    return a;
  }

  // The definition: softmax(q.K / sqrt(d)) V over positions 0..ctx-1, in double, from the values the cache holds.
  std::vector<float> reference(const float* q, int32_t group, int32_t kv_head, int32_t ctx, KvCacheTypes types) const {
    const size_t row = size_t(num_kv_heads) * size_t(head_dim);
    auto value = [&](bool is_k, int64_t slot, int32_t i) -> double {
      const size_t off = size_t(slot) * row + size_t(kv_head) * size_t(head_dim) + size_t(i);
      return is_k ? k[int(types.k)].values[off] : v[int(types.v)].values[off];
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
          for (KvCacheTypes types : kv_type_cases(head_dim)) {
            for (const KernelTable* kt : tables) {
              SCOPED_TRACE(testing::Message() << isa_name(kt->isa) << " head_dim " << head_dim << " group " << group
                                              << " block " << block_size << " ctx " << ctx << types_label(types));
              const int32_t kv_head = ctx % num_kv_heads;
              std::vector<float> out(q.size(), NAN);
              kt->paged_attention(cache.args(q.data(), out.data(), group, kv_head, ctx, types));
              expect_near_all(out, cache.reference(q.data(), group, kv_head, ctx, types), 1e-5f, "vs direct");
              ++cases;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 1500);
}

class PagedAttentionSimdTest : public SimdLevelTest {};
PAGODA_TEST_EVERY_SIMD_LEVEL(PagedAttentionSimdTest);

TEST_P(PagedAttentionSimdTest, EqualsScalar) {
  const KernelTable* simd = simd_;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int32_t group : {4, 8, 16}) {  // keys in lanes; heads in lanes (8 lanes, and 16 from AVX-512)
    for (int32_t head_dim : {1, 7, 8, 9, 31, 64, 80, 128, 160, 256}) {
      for (int32_t ctx : {1, 31, 32, 33, 257}) {
        SCOPED_TRACE(testing::Message() << "group " << group << " head_dim " << head_dim << " ctx " << ctx);
        Cache cache(head_dim, 1, 16, ctx, rng);
        std::vector<float> q(size_t(group) * size_t(head_dim));
        for (float& x : q) x = dist(rng);
        for (KvCacheTypes types : kv_type_cases(head_dim)) {
          std::vector<float> a(q.size()), b(q.size());
          ref::paged_attention(cache.args(q.data(), a.data(), group, 0, ctx, types));
          simd->paged_attention(cache.args(q.data(), b.data(), group, 0, ctx, types));
          expect_near_all(b, a, 1e-5f, kv_types_name(types).c_str());
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
            for (KvCacheTypes types : kv_type_cases(head_dim)) {
              std::vector<float> together(q.size(), NAN), alone(q.size(), NAN);
              AttentionArgs a = cache.args(q.data(), together.data(), group, 1, ctx, types);
              a.num_queries = num_queries;
              a.q_stride = q_stride;
              kt->paged_attention(a);
              for (int32_t i = 0; i < num_queries; ++i) {
                const int32_t own_ctx = ctx - (num_queries - 1 - i);
                kt->paged_attention(
                    cache.args(q.data() + i * q_stride, alone.data() + i * q_stride, group, 1, own_ctx, types));
                const size_t n = size_t(group) * size_t(head_dim);
                ASSERT_EQ(std::memcmp(together.data() + i * q_stride, alone.data() + i * q_stride, n * sizeof(float)),
                          0)
                    << "query " << i << types_label(types);
                const std::vector<float> want = cache.reference(q.data() + i * q_stride, group, 1, own_ctx, types);
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

// An item of several consecutive KV heads (AttentionArgs::num_kv_heads, walked together tile by tile by the
// keys-in-lanes loop, position by position at the AVX-512 level; head by head by the others) gives each head the bits
// of its own one-KV-head item, at every level, with windows, soft caps and sinks; and without them, each head matches
// the direct softmax. Group 20 over 5 heads (100 query heads) and 70 heads of group 1 take several walks; 32 heads of
// group 1 fill two whole groups of sixteen query heads of the address-order walk's scores, 7 heads of group 3 (21
// query heads) a whole group and a part of one.
TEST(PagedAttentionTest, SeveralKvHeadsGiveEachHeadTheBitsOfItsOwnItem) {
  std::mt19937 rng(17);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  struct Shape {
    int32_t group, head_dim, cache_heads, first, heads;
  };
  const Shape shapes[] = {{1, 128, 6, 1, 5}, {2, 64, 6, 0, 6}, {4, 17, 5, 2, 3}, {1, 8, 4, 1, 3},
                          {8, 64, 4, 1, 3},  {12, 32, 3, 0, 3}, {20, 32, 6, 1, 5}, {1, 17, 72, 1, 70},
                          {2, 288, 3, 1, 2},  {1, 128, 34, 1, 32}, {3, 40, 8, 0, 7}};
  int32_t cases = 0;
  for (Isa isa : kAllLevels) {
    const KernelTable* kt = kernels_for(isa);
    if (kt == nullptr) continue;
    for (const Shape& sh : shapes) {
      for (int32_t ctx : {1, 33, 100}) {
        Cache cache(sh.head_dim, sh.cache_heads, 16, ctx, rng);
        const size_t per_head = size_t(sh.group) * size_t(sh.head_dim), n = per_head * size_t(sh.heads);
        std::vector<float> q(n), sinks(size_t(sh.group) * size_t(sh.heads));
        for (float& x : q) x = dist(rng) * 2.0f;
        for (float& x : sinks) x = dist(rng) * 4.0f;
        for (KvCacheTypes types : kv_type_cases(sh.head_dim)) {
          for (int32_t window : {0, 20}) {
            for (float softcap : {0.0f, 3.0f}) {
              for (bool with_sinks : {false, true}) {
                SCOPED_TRACE(testing::Message() << isa_name(isa) << " group " << sh.group << " head_dim "
                                                << sh.head_dim << " heads " << sh.heads << " ctx " << ctx << " window "
                                                << window << " softcap " << softcap << " sinks " << with_sinks
                                                << types_label(types));
                auto item = [&](float* out, int32_t first, int32_t heads) {
                  const int64_t offset = int64_t(first - sh.first) * int64_t(per_head);
                  AttentionArgs a = cache.args(q.data() + offset, out + offset, sh.group, first, ctx, types);
                  a.num_kv_heads = heads;
                  a.window = window;
                  a.softcap = softcap;
                  if (with_sinks) a.sinks = sinks.data() + int64_t(first - sh.first) * sh.group;
                  return a;
                };
                std::vector<float> together(n, NAN), alone(n, NAN);
                kt->paged_attention(item(together.data(), sh.first, sh.heads));
                for (int32_t g = 0; g < sh.heads; ++g) kt->paged_attention(item(alone.data(), sh.first + g, 1));
                ASSERT_EQ(std::memcmp(together.data(), alone.data(), n * sizeof(float)), 0);
                if (window == 0 && softcap == 0.0f && !with_sinks)
                  for (int32_t g = 0; g < sh.heads; ++g) {
                    const std::vector<float> want =
                        cache.reference(q.data() + g * per_head, sh.group, sh.first + g, ctx, types);
                    for (size_t k = 0; k < per_head; ++k)
                      ASSERT_NEAR(together[g * per_head + k], want[k], 1e-5f * (1.0f + std::fabs(want[k])))
                          << "head " << g;
                  }
                ++cases;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 2000);
}

// What each type costs: the attention output over its K/V stays within its bound of the f32 output's scale (f16
// and bf16 round each value, q8_0 and int8 quantize per 32 values or per head, q4_0 to 16 levels).
TEST(PagedAttentionTest, EachTypeStaysCloseToF32) {
  const std::pair<KvDType, double> bounds[] = {{KvDType::kF16, 0.002}, {KvDType::kBF16, 0.02}, {KvDType::kQ8_0, 0.03},
                                               {KvDType::kInt8, 0.03}, {KvDType::kQ4_0, 0.25}};
  for (const auto& [type, bound] : bounds) {
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    const KernelTable& kt = best_kernels();
    double max_err = 0.0, max_ref = 0.0;
    for (int32_t ctx : {16, 100, 500}) {
      Cache cache(64, 1, 16, ctx, rng);
      std::vector<float> q(size_t(64));
      for (float& x : q) x = dist(rng);
      std::vector<float> f(q.size()), typed(q.size());
      kt.paged_attention(cache.args(q.data(), f.data(), 1, 0, ctx, KvDType::kF32));
      kt.paged_attention(cache.args(q.data(), typed.data(), 1, 0, ctx, type));
      for (size_t i = 0; i < q.size(); ++i) {
        max_err = std::max(max_err, double(std::fabs(f[i] - typed[i])));
        max_ref = std::max(max_ref, double(std::fabs(f[i])));
      }
    }
    EXPECT_LT(max_err, bound * max_ref) << kv_dtype_name(type) << ": max |f32 - it| " << max_err << " of max |f32| "
                                        << max_ref;
    EXPECT_GT(max_err, 0.0) << kv_dtype_name(type) << " rounds nothing?";
  }
}

}  // namespace
}  // namespace pagoda::kernels
