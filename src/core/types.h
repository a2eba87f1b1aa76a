// Plain scalar types shared by every module: token, sequence, block and position ids, and tensor dtypes.
// Nothing here allocates or owns memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pagoda {

using TokenId = int32_t;  // index into the vocabulary
using SeqId = int64_t;    // engine-wide sequence id
using BlockId = int32_t;  // physical KV block id
using Pos = int32_t;      // token position within a sequence, 0-based

// Element types of weights and activations. Values are pagoda's own; format/ maps file type ids to these.
enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
};

std::string_view dtype_name(DType dtype);
size_t dtype_size(DType dtype);  // bytes per element

}  // namespace pagoda
