// BlockHash: the identity of a full KV block's content, chained over every block before it. Two blocks have
// the same hash exactly when (up to a 64-bit collision) their own tokens, all earlier tokens of the sequence and
// the extra key (model, adapter) are the same, which is what makes their K/V interchangeable.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"

namespace pagoda {

using BlockHash = uint64_t;

// The parent of a sequence's first block.
inline constexpr BlockHash kRootBlockHash = 0;

// hash(parent, tokens of the block, extra key) with XXH3-64. `block_tokens` is one full block.
BlockHash hash_block(BlockHash parent_hash, std::span<const TokenId> block_tokens, uint64_t extra_key);

// The chained hashes of the first `num_blocks` full blocks of `tokens`, appended to `out`, continuing the chain
// from out.back() (or the root when `out` is empty). tokens.size() >= (out.size() + num_blocks) * block_size.
void append_block_hashes(std::span<const TokenId> tokens, int32_t block_size, int32_t num_blocks, uint64_t extra_key,
                         std::vector<BlockHash>& out);

}  // namespace pagoda
