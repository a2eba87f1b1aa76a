// The rules of llama.cpp's llama_tensor_get_type for the file types in llama_quant_mixture.h, kept in its order of
// tests (the first matching branch wins, and the attn_v / ffn_down counters advance in the branches that count them),
// since the counters make a tensor's type depend on the ones before it.
#include "format/llama_quant_mixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <numeric>

namespace pagoda::format {
namespace {

using FT = LlamaFileType;

struct FileTypeName {
  LlamaFileType type;
  std::string_view name;
};
constexpr std::array kFileTypeNames = {
    FileTypeName{FT::kQ4_0, "Q4_0"},     FileTypeName{FT::kQ8_0, "Q8_0"},     FileTypeName{FT::kQ4_K_S, "Q4_K_S"},
    FileTypeName{FT::kQ4_K_M, "Q4_K_M"}, FileTypeName{FT::kQ5_K_S, "Q5_K_S"}, FileTypeName{FT::kQ5_K_M, "Q5_K_M"},
    FileTypeName{FT::kQ6_K, "Q6_K"},     FileTypeName{FT::kQ3_K_S, "Q3_K_S"}, FileTypeName{FT::kQ3_K_M, "Q3_K_M"},
    FileTypeName{FT::kQ3_K_L, "Q3_K_L"}, FileTypeName{FT::kQ2_K, "Q2_K"},     FileTypeName{FT::kIQ4_XS, "IQ4_XS"},
    FileTypeName{FT::kIQ4_NL, "IQ4_NL"},
};

GgmlType default_type(LlamaFileType t) {
  switch (t) {
    case FT::kQ4_0: return GgmlType::kQ4_0;
    case FT::kQ8_0: return GgmlType::kQ8_0;
    case FT::kQ2_K: return GgmlType::kQ2_K;
    case FT::kQ3_K_S:
    case FT::kQ3_K_M:
    case FT::kQ3_K_L: return GgmlType::kQ3_K;
    case FT::kQ4_K_S:
    case FT::kQ4_K_M: return GgmlType::kQ4_K;
    case FT::kQ5_K_S:
    case FT::kQ5_K_M: return GgmlType::kQ5_K;
    case FT::kQ6_K: return GgmlType::kQ6_K;
    case FT::kIQ4_XS: return GgmlType::kIQ4_XS;
    case FT::kIQ4_NL: return GgmlType::kIQ4_NL;
  }
  return GgmlType::kQ8_0;
}

enum class Category { kOther, kOutput, kTokenEmbd, kAttnQkv, kAttnKvB, kAttnV, kAttnK, kAttnQ, kAttnOutput, kFfnUp,
                      kFfnGate, kFfnDown };

bool name_contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

bool is_token_embd(const std::string& name) {
  return name == "token_embd.weight" || name == "per_layer_token_embd.weight";
}

Category category_of(const std::string& name) {
  if (name == "output.weight") return Category::kOutput;
  if (is_token_embd(name)) return Category::kTokenEmbd;
  if (name_contains(name, "attn_qkv.weight")) return Category::kAttnQkv;
  if (name_contains(name, "attn_kv_b.weight")) return Category::kAttnKvB;
  if (name_contains(name, "attn_v.weight")) return Category::kAttnV;
  if (name_contains(name, "attn_k.weight")) return Category::kAttnK;
  if (name_contains(name, "attn_q.weight")) return Category::kAttnQ;
  if (name_contains(name, "attn_output.weight")) return Category::kAttnOutput;
  if (name_contains(name, "ffn_up")) return Category::kFfnUp;
  if (name_contains(name, "ffn_gate")) return Category::kFfnGate;
  if (name_contains(name, "ffn_down")) return Category::kFfnDown;
  return Category::kOther;
}

bool is_attn_v_like(Category c) { return c == Category::kAttnV || c == Category::kAttnQkv || c == Category::kAttnKvB; }

// ggml_n_dims: trailing dimensions of 1 do not count.
int ggml_dims(const std::vector<int64_t>& dims) {
  int n = int(dims.size());
  while (n > 1 && dims[size_t(n - 1)] == 1) --n;
  return n;
}

// llama.cpp's tensor_allows_quantization for a plain (not --pure, no overrides) run.
bool allows_quantization(const MixtureTensor& t) {
  if (ggml_dims(t.dims) < 2) return false;
  const std::string& n = t.name;
  if (!n.ends_with("weight")) return false;
  static constexpr std::array kKept = {
      "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
      "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
      "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
      "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight",
      "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
      "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd",
      "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook",
      "mm.a.code_embd"};
  for (const char* part : kKept)
    if (name_contains(n, part)) return false;
  return n != "position_embd.weight" && n != "token_types.weight";
}

bool is_block_type(GgmlType t) {
  return t != GgmlType::kF32 && t != GgmlType::kF16 && t != GgmlType::kBF16 && t != GgmlType::kF64 &&
         t != GgmlType::kI8 && t != GgmlType::kI16 && t != GgmlType::kI32 && t != GgmlType::kI64;
}

int block_layer(const std::string& name) {
  int layer = -1;
  if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

bool use_more_bits(int i_layer, int n_layers) {
  return i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2;
}

struct MixtureState {
  int n_attention_wv = 0;
  int i_attention_wv = 0;
  int n_ffn_down = 0;
  int i_ffn_down = 0;
  int i_ffn_gate = 0;
  int i_ffn_up = 0;
  bool has_tied_embeddings = true;
};

// llama_tensor_get_type_impl, for the file types above.
Result<GgmlType> mixture_type(MixtureState& s, const MixtureTensor& t, Category c, LlamaFileType ft,
                              const MixtureModelFacts& facts, bool has_imatrix, GgmlType new_type) {
  const bool falcon = facts.arch == "falcon";
  const int n_expert = std::max(1, facts.num_experts);
  // An MoE model's experts need not be in layer order: the layer comes from the name.
  const auto layer_of = [&](int counter, int n_layer) -> Result<std::pair<int, int>> {
    int i_layer = counter;
    if (n_expert > 1) {
      i_layer = block_layer(t.name);
      if (i_layer < 0 || i_layer >= n_layer)
        return make_error(fmt::format("bad layer {} for tensor {}; the model has {}", i_layer, t.name, n_layer));
    }
    return std::make_pair(i_layer, n_layer);
  };
  // llama.cpp's LLM_TYPE_70B, as its families size it by layer count.
  const bool is_70b = (facts.arch == "llama" && facts.num_layers == 80 && facts.num_heads != facts.num_kv_heads) ||
                      ((facts.arch == "qwen2" || facts.arch == "olmo" || facts.arch == "deci") &&
                       facts.num_layers == 80) ||
                      (facts.arch == "jais2" && facts.num_layers == 68);
  if (c == Category::kOutput || (s.has_tied_embeddings && c == Category::kTokenEmbd)) {
    const int64_t nx = t.dims[0];
    if (falcon || nx % int64_t(ggml_block_size(new_type)) != 0) new_type = GgmlType::kQ8_0;
    else if (new_type != GgmlType::kQ8_0) new_type = GgmlType::kQ6_K;
  } else if (c == Category::kTokenEmbd) {
    // kept at the default type for these file types
  } else if (is_attn_v_like(c)) {
    // llama.cpp's n_gqa(): query heads per KV head, 0 without KV heads.
    const int n_gqa = facts.num_kv_heads > 0 ? facts.num_heads / facts.num_kv_heads : 0;
    if (ft == FT::kQ2_K)
      new_type = n_gqa >= 4 ? GgmlType::kQ4_K : GgmlType::kQ3_K;
    else if (ft == FT::kQ3_K_M)
      new_type = s.i_attention_wv < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
    else if (ft == FT::kQ3_K_L)
      new_type = GgmlType::kQ5_K;
    else if ((ft == FT::kIQ4_NL || ft == FT::kIQ4_XS) && n_gqa >= 4)
      new_type = GgmlType::kQ5_K;
    else if ((ft == FT::kQ4_K_M || ft == FT::kQ5_K_M) && use_more_bits(s.i_attention_wv, s.n_attention_wv))
      new_type = GgmlType::kQ6_K;
    else if (ft == FT::kQ4_K_S && s.i_attention_wv < 4)
      new_type = GgmlType::kQ5_K;
    if (is_70b && (new_type == GgmlType::kQ3_K || new_type == GgmlType::kQ4_K)) new_type = GgmlType::kQ5_K;
    if (facts.num_experts == 8) new_type = GgmlType::kQ8_0;
    ++s.i_attention_wv;
  } else if (c == Category::kAttnK) {
    if (facts.num_experts == 8) new_type = GgmlType::kQ8_0;
  } else if (c == Category::kAttnQ) {
    // only the IQ3 types change it
  } else if (c == Category::kFfnDown) {
    PAGODA_ASSIGN_OR_RETURN(auto info, layer_of(s.i_ffn_down, s.n_ffn_down));
    const auto [i_layer, n_layer] = info;
    if (ft == FT::kQ2_K) {
      new_type = GgmlType::kQ3_K;
    } else if (ft == FT::kQ3_K_M) {
      new_type = i_layer < n_layer / 16                       ? GgmlType::kQ5_K
                 : !falcon || use_more_bits(i_layer, n_layer) ? GgmlType::kQ4_K
                                                              : GgmlType::kQ3_K;
    } else if (ft == FT::kQ3_K_L) {
      new_type = falcon ? GgmlType::kQ4_K : GgmlType::kQ5_K;
    } else if (ft == FT::kQ4_K_M) {
      if (falcon)
        new_type = i_layer < n_layer / 16           ? GgmlType::kQ6_K
                   : use_more_bits(i_layer, n_layer) ? GgmlType::kQ5_K
                                                     : GgmlType::kQ4_K;
      else if (use_more_bits(i_layer, n_layer))
        new_type = GgmlType::kQ6_K;
    } else if ((ft == FT::kIQ4_NL || ft == FT::kIQ4_XS) && !has_imatrix && i_layer < n_layer / 8) {
      new_type = GgmlType::kQ5_K;
    } else if (ft == FT::kQ5_K_M && use_more_bits(i_layer, n_layer)) {
      new_type = GgmlType::kQ6_K;
    } else if (ft == FT::kQ4_K_S && !falcon && i_layer < n_layer / 8) {
      new_type = GgmlType::kQ5_K;
    } else if (ft == FT::kQ4_0 && has_imatrix && i_layer < n_layer / 8) {
      new_type = GgmlType::kQ4_1;
    }
    ++s.i_ffn_down;
  } else if (c == Category::kAttnOutput) {
    if (falcon) {
      if (ft == FT::kQ3_K_L) new_type = GgmlType::kQ4_K;
    } else if (facts.num_experts == 8) {
      if (ft == FT::kQ2_K || ft == FT::kQ3_K_S || ft == FT::kQ3_K_M || ft == FT::kQ4_K_S || ft == FT::kQ4_K_M ||
          ft == FT::kIQ4_NL || ft == FT::kIQ4_XS)
        new_type = GgmlType::kQ5_K;
    } else if (ft == FT::kQ2_K) {
      new_type = GgmlType::kQ3_K;
    } else if (ft == FT::kQ3_K_M) {
      new_type = GgmlType::kQ4_K;
    } else if (ft == FT::kQ3_K_L) {
      new_type = GgmlType::kQ5_K;
    }
  } else if (c == Category::kFfnGate) {
    PAGODA_RETURN_IF_ERROR(layer_of(s.i_ffn_gate, s.n_ffn_down).status());
    ++s.i_ffn_gate;
  } else if (c == Category::kFfnUp) {
    PAGODA_RETURN_IF_ERROR(layer_of(s.i_ffn_up, s.n_ffn_down).status());
    ++s.i_ffn_up;
  }
  return new_type;
}

// tensor_type_fallback: a row that is not whole blocks of the chosen type takes a smaller block, else f16.
GgmlType fallback(const MixtureTensor& t, GgmlType type) {
  const int64_t ncols = t.dims[0];
  if (ncols % int64_t(ggml_block_size(type)) == 0) return type;
  GgmlType to = type;
  switch (type) {
    case GgmlType::kIQ4_XS: to = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K: to = GgmlType::kQ4_0; break;
    case GgmlType::kQ4_K: to = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: to = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: to = GgmlType::kQ8_0; break;
    default: break;  // already a 32-value block type
  }
  if (ncols % int64_t(ggml_block_size(to)) != 0) to = GgmlType::kF16;
  return to;
}

std::string upper_case(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

}  // namespace

std::optional<LlamaFileType> parse_llama_file_type(std::string_view name) {
  const std::string u = upper_case(name);
  for (const FileTypeName& f : kFileTypeNames)
    if (u == f.name) return f.type;
  return std::nullopt;
}

std::string_view llama_file_type_name(LlamaFileType type) {
  for (const FileTypeName& f : kFileTypeNames)
    if (f.type == type) return f.name;
  return "unknown";
}

std::string llama_file_type_names() {
  std::string out;
  for (const FileTypeName& f : kFileTypeNames) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

std::vector<size_t> llama_tensor_order(const std::vector<MixtureTensor>& tensors) {
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int la = block_layer(tensors[a].name), lb = block_layer(tensors[b].name);
    if (la != lb) return la < lb;
    return tensors[a].name < tensors[b].name;
  });
  return order;
}

Result<std::vector<GgmlType>> llama_tensor_types(const std::vector<MixtureTensor>& tensors, LlamaFileType file_type,
                                                 const MixtureModelFacts& facts, bool has_imatrix) {
  MixtureState s;
  for (const MixtureTensor& t : tensors) {
    const Category c = category_of(t.name);
    if (is_attn_v_like(c)) ++s.n_attention_wv;
    if (c == Category::kOutput) s.has_tied_embeddings = false;
  }
  s.n_ffn_down = facts.num_layers;
  const GgmlType base = default_type(file_type);
  std::vector<GgmlType> types;
  types.reserve(tensors.size());
  for (const MixtureTensor& t : tensors) {
    if (!allows_quantization(t)) {
      types.push_back(t.type);
      continue;
    }
    PAGODA_ASSIGN_OR_RETURN(GgmlType chosen,
                            mixture_type(s, t, category_of(t.name), file_type, facts, has_imatrix, base));
    types.push_back(is_block_type(base) ? fallback(t, chosen) : chosen);
  }
  return types;
}

}  // namespace pagoda::format
