// Tests for KvStorage::copy_block (src/kv/kv_storage.h): every layer's K and V of the source block land in the
// destination, and no other block changes.
#include "kv/kv_storage.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

ModelConfig tiny_config() {
  ModelConfig config;
  config.num_layers = 3;
  config.num_kv_heads = 2;
  config.head_dim = 3;
  return config;
}

float k_value(int32_t layer, int64_t slot, int32_t i) { return float(layer * 1000 + slot * 10 + i); }

TEST(KvStorage, CopyBlockCopiesEveryLayerOfKAndV) {
  constexpr int32_t kNumBlocks = 4, kBlockSize = 4;
  KvStorage storage(tiny_config(), kNumBlocks, kBlockSize);
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

TEST(KvStorageDeathTest, CopyBlockChecksIds) {
  KvStorage storage(tiny_config(), 2, 4);
  EXPECT_DEATH(storage.copy_block(0, 2), "outside the pool");
  EXPECT_DEATH(storage.copy_block(1, 1), "onto itself");
}

}  // namespace
}  // namespace pagoda
