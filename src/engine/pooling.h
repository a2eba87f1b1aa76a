// Pooling: how a pooling request (embeddings) turns its prompt's final hidden states (after the model's last
// norm, before the LM head) into one vector, and the names the server, the CLI and GGUF metadata give the
// methods. Owns nothing else: the engine collects the rows, the server normalizes and encodes the vector.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda {

enum class Pooling : uint8_t {
  kNone,  // a generation request
  kLast,  // the last prompt token's hidden state (decoder embedding models: Qwen3-Embedding, e5-mistral)
  kMean,  // the mean over every prompt token
  kCls,   // the first prompt token's (encoder models' CLS)
  kRank,  // the first prompt token's through the model's classification head (a cross-encoder's scores, Model::rank)
};

// "last", "mean", "cls", "rank" (and "none").
std::string_view pooling_name(Pooling pooling);
std::optional<Pooling> parse_pooling(std::string_view name);
// llama.cpp's `<arch>.pooling_type` GGUF values: 0 none, 1 mean, 2 cls, 3 last, 4 rank. nullopt for any other value.
std::optional<Pooling> pooling_from_gguf_type(uint32_t type);

}  // namespace pagoda
