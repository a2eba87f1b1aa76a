// BlockCopy: one copy-on-write the KV bookkeeping decided and the owner of the bytes (KvStorage) must perform
// before the next forward step: all K/V of block `src_block_id` into `dst_block_id`.
#pragma once

#include "core/types.h"

namespace pagoda {

struct BlockCopy {
  BlockId src_block_id = -1;
  BlockId dst_block_id = -1;

  bool operator==(const BlockCopy&) const = default;
};

}  // namespace pagoda
