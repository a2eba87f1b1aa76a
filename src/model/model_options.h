// ModelOptions: how a model runs, never what it computes up to rounding (the switches the ablation benchmark flips
// one by one), plus the one exception a user asks for by name: RoPE scaling overrides of the file's settings. A plain
// value given to create_model; the model keeps a copy.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/rope_scaling.h"

namespace pagoda {

enum class AttentionKind : uint8_t {
  kFlash,  // online softmax straight over the KV blocks: no score matrix, no gather
  kNaive,  // two passes over a full score row per (token, head): the reference
};

std::string_view attention_kind_name(AttentionKind kind);
std::optional<AttentionKind> parse_attention_kind(std::string_view name);  // "flash" | "naive"

class LinearObserver;
class Collectives;

struct ModelOptions {
  bool fusion = true;  // false: --no-fusion, every op runs on its own (for the ablation)
  AttentionKind attention = AttentionKind::kFlash;
  // Q4_0, Q8_0 and INT8 matrices rewritten at load into 8-row interleaved groups for the faster kernels
  // (model/weight_repack.h); false: --no-repack, the file's own layout (for the ablation, and to keep the weights in
  // the page cache only).
  bool repack_weights = true;
  // Borrowed, may be nullptr: shown every linear layer's input (AWQ calibration). It must outlive the model.
  LinearObserver* linear_observer = nullptr;
  // Borrowed, may be nullptr: the group of processes this model is split over (tensor parallel, one rank each;
  // model/tensor_parallel_shard.h). With more than one rank the model holds only this rank's shard and sums
  // the ranks' partial results through it (twice per layer, once for the embedding, and a gather of the
  // logits). It must outlive the model.
  Collectives* tensor_parallel = nullptr;
  // Pipeline parallel: this process holds stage `pipeline_stage` of `pipeline_stages` (contiguous layers;
  // model/pipeline_stage.h); with tensor_parallel too, the group splits that stage's heads.
  int32_t pipeline_stage = 0;
  int32_t pipeline_stages = 1;
  // Replace the model file's RoPE settings (llama.cpp's --rope-scaling, --rope-scale, --yarn-* flags): applied to the
  // config before the model is built, so they change what it computes.
  RopeScalingOverrides rope_overrides{};
};

}  // namespace pagoda
