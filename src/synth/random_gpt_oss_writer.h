// write_random_gpt_oss_model: a gpt-oss GGUF (model/arch_gpt_oss.cc) with a shape's sizes and random weights, in
// llama.cpp's tensor names and keys, so llama.cpp runs the same file: Q/K/V/output biases, attention sinks, the
// router with its bias, stacked experts with theirs, the pre-FFN norm as post_attention_norm, the window and YaRN
// keys, and the placeholder SentencePiece vocabulary. Written straight as GGUF, since pagoda reads no HF folder of the
// family. Does not own the shapes (model_shapes.h) or the random values (random_model_writer.h).
#pragma once

#include <pagoda/status.h>

#include "synth/random_model_writer.h"

namespace pagoda::synth {

// o.shape.gguf_architecture must be "gpt-oss". Matrices in o.weight_type (q8_0 and q4_0 need rows of whole 32-value
// blocks); norms, biases and sinks f32. Norm scales in [0.5, 1.5), sinks around +-1.7 so that both show.
Status write_random_gpt_oss_model(const RandomModelOptions& o);

}  // namespace pagoda::synth
