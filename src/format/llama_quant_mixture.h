// llama.cpp's per-tensor type choice for a file type (llama-quantize's Q2_K, Q3_K_M, Q4_K_M, Q6_K, ...): which
// tensors are quantized at all, which get more bits (output.weight in Q6_K; attn_v, attn_output and ffn_down in some
// or all layers of Q2_K, Q3_K_M/L, Q4_K_M, Q5_K_M, IQ4_NL and IQ4_XS), the fallbacks for rows that are not whole blocks, and the order llama-quantize writes tensors in. Pure
// functions of names, shapes and a few model facts; must not read files or quantize anything.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_types.h"

namespace pagoda::format {

// llama.cpp's llama_ftype values of the file types pagoda writes (general.file_type).
enum class LlamaFileType : uint32_t {
  kQ4_0 = 2,
  kQ8_0 = 7,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kIQ4_NL = 25,
  kIQ4_XS = 30,
};

// "Q4_K_M", "q4_k_m", "Q8_0", ... (llama-quantize's names, case-insensitive) -> the file type; nullopt otherwise.
std::optional<LlamaFileType> parse_llama_file_type(std::string_view name);
std::string_view llama_file_type_name(LlamaFileType type);  // "Q4_K_M"
// The names parse_llama_file_type accepts, for messages: "Q4_0, Q8_0, Q4_K_S, ...".
std::string llama_file_type_names();

// What the rules read of the model (from its GGUF metadata).
struct MixtureModelFacts {
  std::string arch;          // general.architecture
  int32_t num_layers = 0;    // <arch>.block_count
  int32_t num_experts = 0;   // <arch>.expert_count, 0 without
  int32_t num_heads = 0;     // <arch>.attention.head_count
  int32_t num_kv_heads = 0;  // <arch>.attention.head_count_kv (num_heads when absent)
};

struct MixtureTensor {
  std::string name;
  std::vector<int64_t> dims;  // GGUF order, dims[0] = row length
  GgmlType type = GgmlType::kF32;
};

// The tensor order llama-quantize writes: tensors outside the blocks first, then block by block (blk.N by number),
// by name within each.
std::vector<size_t> llama_tensor_order(const std::vector<MixtureTensor>& tensors);

// The type of every tensor (indexed as `tensors`, which must already be in llama_tensor_order), as
// llama_tensor_get_type chooses it; a tensor kept as it is gets its own type. `has_imatrix` changes Q4_0's early
// ffn_down layers (Q4_1 with an importance matrix). Errors: a block tensor whose layer is out of range in an MoE
// model.
Result<std::vector<GgmlType>> llama_tensor_types(const std::vector<MixtureTensor>& tensors, LlamaFileType file_type,
                                                 const MixtureModelFacts& facts, bool has_imatrix);

}  // namespace pagoda::format
