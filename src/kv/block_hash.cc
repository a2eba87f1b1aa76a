// Chained block hashing with XXH3-64.
#include "kv/block_hash.h"

#include <xxhash.h>

#include "core/check.h"

namespace pagoda {

BlockHash hash_block(BlockHash parent_hash, std::span<const TokenId> block_tokens, uint64_t extra_key) {
  // Hash the tokens first, then the fixed-size triple, so no buffer of block_size tokens is needed and the
  // parent, key and tokens cannot be shifted into one another.
  const uint64_t words[3] = {parent_hash, extra_key, XXH3_64bits(block_tokens.data(), block_tokens.size_bytes())};
  return XXH3_64bits(words, sizeof(words));
}

void append_block_hashes(std::span<const TokenId> tokens, int32_t block_size, int32_t num_blocks, uint64_t extra_key,
                         std::vector<BlockHash>& out) {
  PAGODA_CHECK(block_size > 0 && num_blocks >= 0);
  const size_t first_block_idx = out.size();
  PAGODA_CHECK(tokens.size() >= (first_block_idx + size_t(num_blocks)) * size_t(block_size),
               "{} tokens do not fill {} blocks of {}", tokens.size(), first_block_idx + size_t(num_blocks),
               block_size);
  BlockHash parent_hash = out.empty() ? kRootBlockHash : out.back();
  for (size_t block_idx = first_block_idx; block_idx < first_block_idx + size_t(num_blocks); ++block_idx) {
    parent_hash =
        hash_block(parent_hash, tokens.subspan(block_idx * size_t(block_size), size_t(block_size)), extra_key);
    out.push_back(parent_hash);
  }
}

}  // namespace pagoda
