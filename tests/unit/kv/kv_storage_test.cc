// Tests for KvStorage (src/kv/kv_storage.h): copy_block moves every layer's K and V (and, for INT8, the
// scales) of the source block into the destination and changes no other block, for every KV type and K and V of
// different types; block sizes per type; the types a model's heads refuse; a large cache starts on a 2 MiB boundary
// (huge pages) and every byte of any cache reads zero before it is written.
#include "kv/kv_storage.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace pagoda {
namespace {

KvShape tiny_shape() { return KvShape{.num_layers = 3, .kv_dim = 6, .num_kv_heads = 2}; }

float k_value(int32_t layer, int64_t slot, int32_t i) { return float(layer * 1000 + slot * 10 + i); }

TEST(KvStorage, CopyBlockCopiesEveryLayerOfKAndV) {
  constexpr int32_t kNumBlocks = 4, kBlockSize = 4;
  KvStorage storage(tiny_shape(), kNumBlocks, kBlockSize);
  const KvCacheView view = storage.view();
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot)
      for (int32_t i = 0; i < view.kv_dim; ++i) {
        view.k_at(layer, slot)[i] = k_value(layer, slot, i);
        view.v_at(layer, slot)[i] = -k_value(layer, slot, i);
      }
  storage.copy_block(1, 3);
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot) {
      const int64_t block_id = slot / kBlockSize;
      const int64_t src_slot = block_id == 3 ? kBlockSize + slot % kBlockSize : slot;
      for (int32_t i = 0; i < view.kv_dim; ++i) {
        ASSERT_EQ(view.k_at(layer, slot)[i], k_value(layer, src_slot, i)) << layer << " " << slot << " " << i;
        ASSERT_EQ(view.v_at(layer, slot)[i], -k_value(layer, src_slot, i)) << layer << " " << slot << " " << i;
      }
    }
}

TEST(KvStorage, StartsZeroedAndALargeCacheOnA2MiBBoundary) {
  // 4 layers x 1024 slots x 1024 f32 values: 16 MiB a side; the tiny cache's sides are a few bytes.
  KvStorage large(KvShape{.num_layers = 4, .kv_dim = 1024, .num_kv_heads = 8}, 64, 16);
  KvStorage tiny(tiny_shape(), 2, 2, KvDType::kInt8);
  const KvCacheView lv = large.view(), tv = tiny.view();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lv.k) % (uintptr_t(2) << 20), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(lv.v) % (uintptr_t(2) << 20), 0u);
  for (const KvCacheView* view : {&lv, &tv})
    for (int32_t layer = 0; layer < view->num_layers; ++layer)
      for (int64_t slot = 0; slot < view->num_slots; slot += 7)
        for (int64_t b = 0; b < view->k_row_bytes; ++b)
          ASSERT_EQ(view->k_row(layer, slot)[b] | view->v_row(layer, slot)[b], 0) << layer << " " << slot << " " << b;
  for (int64_t i = 0; i < int64_t(tv.num_layers) * tv.num_slots * tv.num_kv_heads; ++i)
    ASSERT_EQ(tv.k_scale[i] + tv.v_scale[i], 0.0f);
  // Written and read back at both ends.
  lv.k_at(0, 0)[0] = 1.5f;
  lv.v_at(3, lv.num_slots - 1)[1023] = -2.5f;
  EXPECT_EQ(lv.k_at(0, 0)[0], 1.5f);
  EXPECT_EQ(lv.v_at(3, lv.num_slots - 1)[1023], -2.5f);
}

TEST(KvStorage, CopyBlockCopiesInt8ValuesAndScales) {
  constexpr int32_t kNumBlocks = 3, kBlockSize = 2;
  KvStorage storage(tiny_shape(), kNumBlocks, kBlockSize, KvDType::kInt8);
  const KvCacheView view = storage.view();
  ASSERT_EQ(view.k_dtype, KvDType::kInt8);
  ASSERT_EQ(view.v_dtype, KvDType::kInt8);
  ASSERT_EQ(view.num_kv_heads, 2);
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot) {
      for (int32_t i = 0; i < view.kv_dim; ++i) {
        view.k8_at(layer, slot)[i] = int8_t(layer * 20 + slot * 3 + i);
        view.v8_at(layer, slot)[i] = int8_t(-(layer * 20 + slot * 3 + i));
      }
      for (int32_t h = 0; h < view.num_kv_heads; ++h) {
        view.k_scale_at(layer, slot)[h] = k_value(layer, slot, h);
        view.v_scale_at(layer, slot)[h] = -k_value(layer, slot, h);
      }
    }
  storage.copy_block(0, 2);
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot) {
      const int64_t src_slot = slot / kBlockSize == 2 ? slot % kBlockSize : slot;
      for (int32_t i = 0; i < view.kv_dim; ++i) {
        ASSERT_EQ(view.k8_at(layer, slot)[i], int8_t(layer * 20 + src_slot * 3 + i));
        ASSERT_EQ(view.v8_at(layer, slot)[i], int8_t(-(layer * 20 + src_slot * 3 + i)));
      }
      for (int32_t h = 0; h < view.num_kv_heads; ++h) {
        ASSERT_EQ(view.k_scale_at(layer, slot)[h], k_value(layer, src_slot, h));
        ASSERT_EQ(view.v_scale_at(layer, slot)[h], -k_value(layer, src_slot, h));
      }
    }
}

TEST(KvStorage, Int8BlocksCostAboutAQuarterOfF32) {
  const KvShape shape{.num_layers = 22, .kv_dim = 256, .num_kv_heads = 4};  // TinyLlama's KV shape
  const int64_t f32 = KvStorage::bytes_per_block_for(shape, 16, KvDType::kF32);
  const int64_t int8 = KvStorage::bytes_per_block_for(shape, 16, KvDType::kInt8);
  EXPECT_EQ(f32, int64_t(2) * 22 * 16 * 256 * 4);
  // int8 values plus one f32 scale per token per KV head for K and for V.
  EXPECT_EQ(int8, int64_t(2) * 22 * 16 * (256 + 4 * 4));
  EXPECT_LT(double(int8) / double(f32), 0.27);
  KvStorage storage(shape, 2, 16, KvDType::kInt8);
  EXPECT_EQ(storage.bytes_per_block(), int8);
  EXPECT_EQ(storage.total_bytes(), 2 * int8);
}

// Every type's row bytes, K and V of different types: block 2's bytes (and int8 scales) become block 0's, the rest
// stay.
class KvStorageTypes : public testing::TestWithParam<KvCacheTypes> {};

TEST_P(KvStorageTypes, CopyBlockCopiesEveryByteOfKAndV) {
  const KvShape shape{.num_layers = 2, .kv_dim = 64, .num_kv_heads = 2};  // heads of 32: every type fits
  constexpr int32_t kNumBlocks = 3, kBlockSize = 2;
  KvStorage storage(shape, kNumBlocks, kBlockSize, GetParam());
  const KvCacheView view = storage.view();
  ASSERT_EQ(view.types(), GetParam());
  ASSERT_EQ(view.k_row_bytes, kv_row_bytes(GetParam().k, 64));
  ASSERT_EQ(view.v_row_bytes, kv_row_bytes(GetParam().v, 64));
  auto byte = [](int32_t layer, int64_t slot, int64_t i, int side) { return uint8_t(layer * 71 + slot * 13 + i + side); };
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot) {
      for (int64_t i = 0; i < view.k_row_bytes; ++i) view.k_row(layer, slot)[i] = byte(layer, slot, i, 0);
      for (int64_t i = 0; i < view.v_row_bytes; ++i) view.v_row(layer, slot)[i] = byte(layer, slot, i, 1);
      for (int32_t h = 0; h < view.num_kv_heads; ++h) {
        if (view.k_dtype == KvDType::kInt8) view.k_scale_at(layer, slot)[h] = k_value(layer, slot, h);
        if (view.v_dtype == KvDType::kInt8) view.v_scale_at(layer, slot)[h] = -k_value(layer, slot, h);
      }
    }
  storage.copy_block(0, 2);
  for (int32_t layer = 0; layer < view.num_layers; ++layer)
    for (int64_t slot = 0; slot < view.num_slots; ++slot) {
      const int64_t src_slot = slot / kBlockSize == 2 ? slot % kBlockSize : slot;
      for (int64_t i = 0; i < view.k_row_bytes; ++i) ASSERT_EQ(view.k_row(layer, slot)[i], byte(layer, src_slot, i, 0));
      for (int64_t i = 0; i < view.v_row_bytes; ++i) ASSERT_EQ(view.v_row(layer, slot)[i], byte(layer, src_slot, i, 1));
      for (int32_t h = 0; h < view.num_kv_heads; ++h) {
        if (view.k_dtype == KvDType::kInt8) {
          ASSERT_EQ(view.k_scale_at(layer, slot)[h], k_value(layer, src_slot, h));
        }
        if (view.v_dtype == KvDType::kInt8) {
          ASSERT_EQ(view.v_scale_at(layer, slot)[h], -k_value(layer, src_slot, h));
        }
      }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, KvStorageTypes,
                         testing::Values(KvCacheTypes(KvDType::kF32), KvCacheTypes(KvDType::kF16),
                                         KvCacheTypes(KvDType::kBF16), KvCacheTypes(KvDType::kQ8_0),
                                         KvCacheTypes(KvDType::kQ4_0), KvCacheTypes(KvDType::kInt8),
                                         KvCacheTypes(KvDType::kQ8_0, KvDType::kF16),
                                         KvCacheTypes(KvDType::kF16, KvDType::kInt8)));

TEST(KvStorage, BytesPerTokenOfEachType) {
  const KvShape shape{.num_layers = 22, .kv_dim = 256, .num_kv_heads = 4};  // TinyLlama's KV shape
  const int64_t values = int64_t(2) * 22 * 256;                             // K and V of every layer
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvDType::kF32), values * 4);
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvDType::kF16), values * 2);
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvDType::kBF16), values * 2);
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvDType::kQ8_0), values / 32 * 34);
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvDType::kQ4_0), values / 32 * 18);
  EXPECT_EQ(KvStorage::bytes_per_token(shape, KvCacheTypes(KvDType::kQ8_0, KvDType::kF16)),
            22 * 256 / 32 * 34 + 22 * 256 * 2);
  EXPECT_EQ(KvStorage::bytes_per_block_for(shape, 16, KvDType::kF16),
            16 * KvStorage::bytes_per_token(shape, KvDType::kF16));
}

TEST(KvStorage, BlockTypesNeedHeadsOfWholeBlocks) {
  const KvShape heads_of_8{.num_layers = 5, .kv_dim = 32, .num_kv_heads = 4};  // stories260K's
  EXPECT_EQ(KvStorage::kv_types_fit(heads_of_8, KvDType::kF16), "");
  EXPECT_EQ(KvStorage::kv_types_fit(heads_of_8, KvDType::kInt8), "");
  EXPECT_EQ(KvStorage::kv_types_fit(heads_of_8, KvCacheTypes(KvDType::kF16, KvDType::kQ4_0)),
            "q4_0 KV cache needs heads of a multiple of 32 values; this model's have 8 (use f16, bf16, int8 or f32)");
  EXPECT_EQ(KvStorage::kv_types_fit(KvShape{.num_layers = 1, .kv_dim = 256, .num_kv_heads = 4}, KvDType::kQ8_0), "");
}

TEST(KvTypes, NamesRoundTrip) {
  for (KvDType t :
       {KvDType::kF32, KvDType::kF16, KvDType::kBF16, KvDType::kQ8_0, KvDType::kQ4_0, KvDType::kInt8})
    EXPECT_EQ(parse_kv_dtype(kv_dtype_name(t)), t);
  EXPECT_EQ(parse_kv_dtype("fp16"), std::nullopt);
  EXPECT_EQ(parse_kv_dtype("q4_1"), std::nullopt);
  EXPECT_EQ(KvCacheTypes().k, KvDType::kF16);  // llama.cpp's default
  EXPECT_EQ(kv_types_name(KvDType::kQ8_0), "q8_0");
  EXPECT_EQ(kv_types_name(KvCacheTypes(KvDType::kQ8_0, KvDType::kF16)), "K q8_0, V f16");
}

TEST(KvStorageDeathTest, CopyBlockChecksIds) {
  KvStorage storage(tiny_shape(), 2, 4);
  EXPECT_DEATH(storage.copy_block(0, 2), "outside the pool");
  EXPECT_DEATH(storage.copy_block(1, 1), "onto itself");
}

}  // namespace
}  // namespace pagoda
