// The OpenAI embeddings API's request and response shapes (POST /v1/embeddings), and llama-server's own
// (POST /embedding and /embeddings: "input" or "content", its embd_normalize, an array of {"index", "embedding":
// [[...]]}): pure functions from a JSON body to validated parameters (or an ApiError naming the field), and from
// pooled vectors to the response body (normalization, float or base64 encoding). No engine, no sockets: everything here
// is tested on strings.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "server/api_error.h"
#include "server/openai_protocol.h"

namespace pagoda::server {

inline constexpr int32_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit on one request's inputs

enum class EmbeddingEncoding : uint8_t { kFloat, kBase64 };

struct EmbeddingParams {
  std::optional<std::string> model;
  std::vector<PromptInput> inputs;  // texts or token ids, one vector each
  EmbeddingEncoding encoding = EmbeddingEncoding::kFloat;
  std::optional<int64_t> dimensions;  // as asked; checked against the model (matryoshka_dimensions.h)
  bool normalize = true;              // vLLM's `normalize`: L2-normalized vectors (OpenAI's are)
  // Whose shape the answer takes: OpenAI's, Ollama's /api/embed or its legacy /api/embeddings, or llama-server's
  // /embedding.
  enum class Api : uint8_t { kOpenAi, kOllama, kOllamaLegacy, kLlama } api = Api::kOpenAi;
  // llama-server's embd_normalize (kLlama only; `normalize` is then unused): -1 none, 0 max-abs scaled to int16's
  // range, 1 taxicab, 2 Euclidean (its default), p > 2 the p-norm.
  int32_t embd_normalize = 2;
  std::string ollama_model;  // Ollama's: the model's name as the client gave it
};

// Parses and validates a request body. Unknown fields, wrong types, empty inputs and more than
// kMaxEmbeddingInputs inputs are errors naming the field.
std::optional<ApiError> parse_embedding_params(std::string_view body, EmbeddingParams* out);

// llama-server's /embedding body: "input" or "content" (a string, token ids, or an array of either), "model",
// "encoding_format" ("float" only: its vectors are JSON numbers), "embd_normalize" (an integer >= -1). Other fields
// are errors naming them.
std::optional<ApiError> parse_llama_embedding_params(std::string_view body, EmbeddingParams* out);

// Divides `v` by its L2 norm (by 1e-12 at least, as torch's F.normalize, so a zero vector stays zero).
void l2_normalize(std::vector<float>& v);
// The vector's f32 values, little-endian, in standard base64 (what OpenAI's encoding_format "base64" sends).
std::string base64_f32(const std::vector<float>& v);
// llama.cpp's common_embd_normalize of `v` in place for an embd_normalize value (EmbeddingParams::embd_normalize): v
// times 1 / norm, or 0 where the norm is 0.
void llama_embd_normalize(std::vector<float>& v, int32_t embd_normalize);

// The whole response: {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}.
std::string embeddings_response(const std::vector<std::vector<float>>& vectors, EmbeddingEncoding encoding,
                                const std::string& model, int64_t prompt_tokens);
// llama-server's /embedding response: [{"index": i, "embedding": [[...]]}] (one pooled vector each, in an array as
// its per-token vectors would be).
std::string llama_embedding_response(const std::vector<std::vector<float>>& vectors);

}  // namespace pagoda::server
