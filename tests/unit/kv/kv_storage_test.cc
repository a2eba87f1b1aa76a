// Tests for KvStorage (src/kv/kv_storage.h): copy_block moves every layer's K and V (and, for INT8, the
// scales) of the source block into the destination and changes no other block; block sizes per dtype.
#include "kv/kv_storage.h"

#include <gtest/gtest.h>

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

TEST(KvStorage, CopyBlockCopiesInt8ValuesAndScales) {
  constexpr int32_t kNumBlocks = 3, kBlockSize = 2;
  KvStorage storage(tiny_shape(), kNumBlocks, kBlockSize, KvDType::kInt8);
  const KvCacheView view = storage.view();
  ASSERT_EQ(view.dtype, KvDType::kInt8);
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

TEST(KvStorageDeathTest, CopyBlockChecksIds) {
  KvStorage storage(tiny_shape(), 2, 4);
  EXPECT_DEATH(storage.copy_block(0, 2), "outside the pool");
  EXPECT_DEATH(storage.copy_block(1, 1), "onto itself");
}

}  // namespace
}  // namespace pagoda
