// Tests for BlockTable (src/kv/block_table.h): slot arithmetic over non-contiguous blocks, sizing, replace.
#include "kv/block_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace pagoda {
namespace {

TEST(BlockTable, SlotIdFollowsTheTable) {
  BlockTable table(4);
  EXPECT_TRUE(table.empty());
  table.append(5);
  table.append(2);
  table.append(7);
  EXPECT_EQ(table.num_blocks(), 3);
  EXPECT_EQ(table.num_slots(), 12);
  EXPECT_EQ(std::vector<BlockId>(table.block_ids().begin(), table.block_ids().end()), (std::vector<BlockId>{5, 2, 7}));
  const int32_t expected[12] = {20, 21, 22, 23, 8, 9, 10, 11, 28, 29, 30, 31};
  for (Pos pos = 0; pos < 12; ++pos) EXPECT_EQ(table.slot_id(pos), expected[pos]) << "pos " << pos;
}

TEST(BlockTable, NumBlocksFor) {
  BlockTable table(4);
  EXPECT_EQ(table.num_blocks_for(0), 0);
  EXPECT_EQ(table.num_blocks_for(1), 1);
  EXPECT_EQ(table.num_blocks_for(4), 1);
  EXPECT_EQ(table.num_blocks_for(5), 2);
  EXPECT_EQ(table.num_blocks_for(10), 3);
}

TEST(BlockTable, ReplaceAndClear) {
  BlockTable table(4);
  table.append(0);
  table.append(1);
  table.replace(1, 6);
  EXPECT_EQ(table.block_id(1), 6);
  EXPECT_EQ(table.slot_id(5), 25);
  table.clear();
  EXPECT_TRUE(table.empty());
}

TEST(BlockTableDeathTest, PositionPastTheBlocksIsABug) {
  BlockTable table(4);
  table.append(3);
  EXPECT_DEATH((void)table.slot_id(4), "outside the 4 slots");
  EXPECT_DEATH((void)table.block_id(1), "logical block 1 of 1");
}

}  // namespace
}  // namespace pagoda
