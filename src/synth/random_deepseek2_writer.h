// write_random_deepseek2_model: a deepseek2 GGUF (model/arch_deepseek2.cc) with a shape's sizes and random weights, in
// llama.cpp's tensor names and keys with the latent attention split for absorption (attn_kv_a_mqa, attn_kv_a_norm,
// attn_k_b, attn_v_b; the q LoRA when the shape has one), so llama.cpp runs the same file: the leading dense layers,
// then experts beside the shared ones, the selection bias exp_probs_b under sigmoid routing, the YaRN keys, and the
// placeholder SentencePiece vocabulary. Written straight as GGUF (pagoda reads no HF folder of the family yet). Does
// not own the shapes (model_shapes.h) or the random values (random_model_writer.h).
#pragma once

#include <pagoda/status.h>

#include "synth/random_model_writer.h"

namespace pagoda::synth {

// o.shape.gguf_architecture must be "deepseek2". Matrices in o.weight_type (q8_0 and q4_0 need rows of whole 32-value
// blocks); norms and the selection bias f32, norm scales in [0.5, 1.5), the bias in [-0.1, 0.1).
Status write_random_deepseek2_model(const RandomModelOptions& o);

}  // namespace pagoda::synth
