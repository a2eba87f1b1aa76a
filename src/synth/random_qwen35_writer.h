// write_random_qwen35_model: a qwen35 GGUF, or qwen35moe for a shape with experts (model/arch_qwen35.cc), or a
// qwen3next GGUF (model/arch_qwen3next.cc), with a shape's sizes and random weights, in llama.cpp's tensor names and
// keys, so llama.cpp runs the same file: gated DeltaNet layers (attn_qkv, attn_gate, ssm_conv1d, ssm_dt.bias, ssm_a,
// ssm_beta and ssm_alpha or qwen3next's fused ssm_ba, ssm_norm, ssm_out) with every fourth layer gated attention
// (attn_q of query and gate, Q/K norms), a dense FFN or the router, stacked experts and a gated shared expert, the
// pre-FFN norm as post_attention_norm, the ssm.* keys, qwen35's M-RoPE sections, and the placeholder SentencePiece
// vocabulary. Does not own the shapes (model_shapes.h) or the random values (random_model_writer.h).
#pragma once

#include <pagoda/status.h>

#include "synth/random_model_writer.h"

namespace pagoda::synth {

// o.shape.gguf_architecture must be "qwen35" (the file's is qwen35moe when the shape has experts) or "qwen3next"
// (which needs experts and a shared expert). Matrices in o.weight_type (q8_0 and q4_0 need rows of whole 32-value
// blocks); norms, convolution taps, ssm_a and ssm_dt f32. ssm_a in [-1.5, -0.5) (a decay per value head), the taps
// around +-0.5 so that the convolution passes a signal on.
Status write_random_qwen35_model(const RandomModelOptions& o);

}  // namespace pagoda::synth
