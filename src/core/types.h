// Plain scalar types shared by every module: token, sequence, block and position ids, and tensor dtypes.
// Nothing here allocates or owns memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
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
  kQ8_0,  // GGUF block: fp16 scale + 32 int8 (34 bytes per 32 elements)
  kQ4_0,  // GGUF block: fp16 scale + 32 4-bit (18 bytes per 32 elements)
  // pagoda's own (README "Weight types"):
  kInt8,         // per output row: f32 scale + num_in int8 (4 + n bytes per row; any row length)
  kAwqInt4G32,   // AWQ group of 32: fp16 scale, u8 zero point, pad, 16 bytes of nibbles (20 bytes)
  kAwqInt4G64,   // group of 64 (36 bytes)
  kAwqInt4G128,  // group of 128 (68 bytes)
  // In memory only, made at load time from kQ4_0 (quant/block_q4_0x8.h): groups of 8 rows interleaved, the same
  // bytes per row as kQ4_0; a row pointer is meaningful only for rows that are multiples of 8.
  kQ4_0x8,
  kQ8_0x8,     // the same from kQ8_0 (quant/block_q8_0x8.h)
  kInt8x8,     // the same from kInt8 (quant/row_int8x8.h; rows of a multiple of 4 values)
  kAwqInt4x8,  // the same from any kAwqInt4G* (quant/block_awq_int4x8.h; 19 bytes per 32 values)
  // Groups of 16 rows, for 512-bit registers (the same block headers and bytes per row as their x8 twins).
  kQ4_0x16,
  kQ8_0x16,
  kAwqInt4x16,
  kInt8x16,
  // ggml's K-quant super-blocks of 256 values (quant/block_kquants.h), as a GGUF stores them.
  kQ4_K,
  kQ5_K,
  kQ6_K,
  // In memory only, made at load time from them (quant/block_kquant_x8.h): groups of 8 rows interleaved per
  // super-block, their scales unpacked to bytes (148, 180 and 210 bytes per row and 256 values).
  kQ4_Kx8,
  kQ5_Kx8,
  kQ6_Kx8,
  // ggml's 4-bit codebook blocks (quant/block_iq4_mxfp4.h) as a GGUF stores them, and their 8-row interleaved
  // copies made at load (quant/block_iq4_x8.h; 18, 138 and 17 bytes per row and 32, 256 and 32 values).
  kIQ4_NL,
  kIQ4_XS,
  kMXFP4,
  kIQ4_NLx8,
  kIQ4_XSx8,
  kMXFP4x8,
  // ggml's 2- and 3-bit K-quants (quant/block_kquants.h) as a GGUF stores them, and their 8-row interleaved copies
  // made at load (quant/block_kquant_x8.h; 84 and 114 bytes per row and 256 values against the file's 84 and 110).
  kQ2_K,
  kQ3_K,
  kQ2_Kx8,
  kQ3_Kx8,
  // In memory only: pagoda's Q7_K, the lossless carrier of ggml's IQ2_* made at load (quant/block_q7_k.h: Q6_K's
  // super-block with byte quants, 274 bytes per row and 256 values), and its 8-row interleaved copy.
  kQ7_K,
  kQ7_Kx8,
  // ggml's legacy blocks with a minimum (quant/block_legacy_quants.h: q * d + m, 4- or 5-bit q) as a GGUF stores
  // them, and their 8-row interleaved copies made at load (quant/block_legacy_x8.h; 20 and 24 bytes per row and 32
  // values, as the file's).
  kQ4_1,
  kQ5_1,
  kQ4_1x8,
  kQ5_1x8,
};
inline constexpr size_t kNumDTypes = size_t(DType::kQ5_1x8) + 1;  // keep the last enumerator here

std::string_view dtype_name(DType dtype);
// The in-memory row-interleaved types (kQ4_0x8, kQ8_0x8, kInt8x8, kAwqInt4x8, their x16 twins, the K-quant,
// 4-bit codebook and Q4_1/Q5_1 x8s).
bool dtype_is_row_interleaved(DType dtype);
// Rows per interleaved group (8 or 16); 1 for the other types. A row pointer is meaningful only at group starts.
int64_t dtype_interleave_rows(DType dtype);
// Bytes of a row of `num_elements` (a multiple of the group for the block types).
int64_t dtype_row_bytes(DType dtype, int64_t num_elements);
// Values per block: 1 for the float types and kInt8, 32 for Q8_0/Q4_0/Q4_1/Q5_1/IQ4_NL/MXFP4, the group for the AWQ types,
// 256 for the K-quants (Q7_K too) and IQ4_XS.
int64_t dtype_block_size(DType dtype);
bool dtype_is_awq_int4(DType dtype);

// What the KV cache stores per value, chosen for K and V separately. kF16/kBF16: one 16-bit float a value; kQ8_0 and
// kQ4_0: ggml's 32-value blocks with an fp16 scale (quant/block_q8_0.h, block_q4_0.h), so a head's rows need a
// multiple of 32 values; kInt8: pagoda's own, int8 values with one f32 scale per token per KV head, kept apart.
enum class KvDType : uint8_t { kF32, kInt8, kF16, kBF16, kQ8_0, kQ4_0 };
inline constexpr KvDType kDefaultKvDType = KvDType::kF16;  // as llama.cpp's default cache type

// "f32", "f16", "bf16", "q8_0", "q4_0" (llama.cpp's --cache-type names) or "int8"; nullopt for anything else.
std::optional<KvDType> parse_kv_dtype(std::string_view name);
const char* kv_dtype_name(KvDType dtype);
// The names parse_kv_dtype takes, comma-separated, for messages.
const char* kv_dtype_names();
// Values per block: 32 for kQ8_0 and kQ4_0, else 1. A KV head's row must hold a whole number of blocks.
int32_t kv_dtype_block_values(KvDType dtype);
// Bytes of `num_values` values (a multiple of the block), without kInt8's scales.
int64_t kv_row_bytes(KvDType dtype, int64_t num_values);

// The KV cache's types: K and V. One type converts to both.
struct KvCacheTypes {
  KvDType k = kDefaultKvDType;
  KvDType v = kDefaultKvDType;

  constexpr KvCacheTypes() = default;
  constexpr KvCacheTypes(KvDType both) : k(both), v(both) {}  // NOLINT(google-explicit-constructor): both sides
  constexpr KvCacheTypes(KvDType k_type, KvDType v_type) : k(k_type), v(v_type) {}
  bool operator==(const KvCacheTypes&) const = default;
};
// "f16" when K and V agree, else "K q8_0, V f16".
std::string kv_types_name(KvCacheTypes types);

}  // namespace pagoda
