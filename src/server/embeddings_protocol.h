// The OpenAI embeddings API's request and response shapes (POST /v1/embeddings): pure functions from a JSON body
// to validated parameters (or an ApiError naming the field), and from pooled vectors to the response body (L2
// normalization, float or base64 encoding). No engine, no sockets: everything here is tested on strings.
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
  // Whose shape the answer takes: OpenAI's, Ollama's /api/embed or its legacy /api/embeddings.
  enum class Api : uint8_t { kOpenAi, kOllama, kOllamaLegacy } api = Api::kOpenAi;
  std::string ollama_model;  // Ollama's: the model's name as the client gave it
};

// Parses and validates a request body. Unknown fields, wrong types, empty inputs and more than
// kMaxEmbeddingInputs inputs are errors naming the field.
std::optional<ApiError> parse_embedding_params(std::string_view body, EmbeddingParams* out);

// Divides `v` by its L2 norm (by 1e-12 at least, as torch's F.normalize, so a zero vector stays zero).
void l2_normalize(std::vector<float>& v);
// The vector's f32 values, little-endian, in standard base64 (what OpenAI's encoding_format "base64" sends).
std::string base64_f32(const std::vector<float>& v);

// The whole response: {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
// "usage": {"prompt_tokens", "total_tokens"}}.
std::string embeddings_response(const std::vector<std::vector<float>>& vectors, EmbeddingEncoding encoding,
                                const std::string& model, int64_t prompt_tokens);

}  // namespace pagoda::server
