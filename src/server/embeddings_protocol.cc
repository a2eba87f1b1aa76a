// Embeddings request parsing and response building.
#include "server/embeddings_protocol.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "server/json_text.h"

namespace pagoda::server {
namespace {

std::optional<ApiError> embedding_token_ids(const nlohmann::json& arr, std::vector<TokenId>* out) {
  if (arr.empty()) return invalid_request("'input' must not hold an empty array of token ids", "input");
  for (const nlohmann::json& t : arr) {
    if (!t.is_number_integer() && !t.is_number_unsigned())
      return invalid_request("'input' token ids must be integers", "input");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > INT32_MAX) return invalid_request(fmt::format("'input' has token id {}", id), "input");
    out->push_back(TokenId(id));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_embedding_inputs(const nlohmann::json& input, std::vector<PromptInput>* inputs) {
  const char* const kShape =
      "'input' must be a string, an array of strings, an array of token ids, or an array of "
      "arrays of token ids";
  if (input.is_string()) {
    inputs->push_back({input.get<std::string>(), {}});
  } else if (input.is_array()) {
    if (input.empty()) return invalid_request("'input' must not be an empty array", "input");
    if (input[0].is_number()) {  // one input as token ids
      PromptInput in;
      if (auto e = embedding_token_ids(input, &in.tokens)) return e;
      inputs->push_back(std::move(in));
    } else {
      for (const nlohmann::json& item : input) {
        PromptInput in;
        if (item.is_string()) {
          in.text = item.get<std::string>();
        } else if (item.is_array()) {
          if (auto e = embedding_token_ids(item, &in.tokens)) return e;
        } else {
          return invalid_request(kShape, "input");
        }
        inputs->push_back(std::move(in));
        if (int32_t(inputs->size()) > kMaxEmbeddingInputs)
          return invalid_request(fmt::format("at most {} inputs per request", kMaxEmbeddingInputs), "input");
      }
    }
  } else {
    return invalid_request(kShape, "input");
  }
  for (const PromptInput& in : *inputs)
    if (in.text && in.text->empty()) return invalid_request("'input' must not hold an empty string", "input");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_embedding_params(std::string_view body_text, EmbeddingParams* out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  EmbeddingParams p;
  for (const auto& [key, value] : body.items()) {
    if (key == "input" || key == "model" || key == "encoding_format" || key == "dimensions" || key == "normalize" ||
        key == "user")
      continue;
    if (key == "truncate_prompt_tokens" || key == "add_special_tokens" || key == "embd_normalize" ||
        key == "priority" || key == "additional_data")
      return invalid_request(fmt::format("'{}' is not supported by this server's /v1/embeddings endpoint", key), key);
    return invalid_request(fmt::format("Unrecognized request argument supplied: {}", key), key);
  }
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) return invalid_request("'input' is required", "input");
  if (auto e = parse_embedding_inputs(*input, &p.inputs)) return e;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_request("'model' must be a string", "model");
    p.model = it->get<std::string>();
  }
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (*it == "float") {
      p.encoding = EmbeddingEncoding::kFloat;
    } else if (*it == "base64") {
      p.encoding = EmbeddingEncoding::kBase64;
    } else {
      return invalid_request(fmt::format("'encoding_format' must be \"float\" or \"base64\", got {}", it->dump()),
                             "encoding_format");
    }
  }
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() && !it->is_number_unsigned())
      return invalid_request("'dimensions' must be an integer", "dimensions");
    if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT32_MAX))
      return invalid_request("'dimensions' is too large", "dimensions");
    p.dimensions = it->get<int64_t>();
    if (*p.dimensions < 1) return invalid_request("'dimensions' must be at least 1", "dimensions");
  }
  if (auto it = body.find("normalize"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return invalid_request("'normalize' must be a boolean", "normalize");
    p.normalize = it->get<bool>();
  }
  if (auto it = body.find("user"); it != body.end() && !it->is_null() && !it->is_string())
    return invalid_request("'user' must be a string", "user");
  *out = std::move(p);
  return std::nullopt;
}

std::optional<ApiError> parse_llama_embedding_params(std::string_view body_text, EmbeddingParams* out) {
  nlohmann::json body;
  if (auto e = parse_json_object(body_text, &body)) return e;
  EmbeddingParams p;
  p.api = EmbeddingParams::Api::kLlama;
  for (const auto& [key, value] : body.items()) {
    if (key == "input" || key == "content" || key == "model" || key == "encoding_format" || key == "embd_normalize")
      continue;
    return invalid_request(fmt::format("'{}' is not supported by this server's /embedding endpoint", key), key);
  }
  auto input = body.find("input");
  const char* field = "input";
  if (input == body.end() || input->is_null()) {
    input = body.find("content");
    field = "content";
  }
  if (input == body.end() || input->is_null())
    return invalid_request("\"input\" or \"content\" must be provided", "input");
  if (auto e = parse_embedding_inputs(*input, &p.inputs)) {
    e->param = field;
    return e;
  }
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return invalid_request("'model' must be a string", "model");
    p.model = it->get<std::string>();
  }
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null() && *it != "float")
    return invalid_request(fmt::format("'encoding_format' must be \"float\" on /embedding (its vectors are JSON "
                                       "numbers; /v1/embeddings sends base64), got {}",
                                       it->dump()),
                           "encoding_format");
  if (auto it = body.find("embd_normalize"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < -1 || it->get<int64_t>() > 1000)
      return invalid_request("'embd_normalize' must be an integer from -1 to 1000", "embd_normalize");
    p.embd_normalize = int32_t(it->get<int64_t>());
  }
  *out = std::move(p);
  return std::nullopt;
}

void llama_embd_normalize(std::vector<float>& v, int32_t embd_normalize) {
  double sum = 0.0;
  switch (embd_normalize) {
    case -1: sum = 1.0; break;
    case 0:  // the largest magnitude maps to 32760 (int16's range)
      for (float x : v) sum = std::max(sum, double(std::fabs(x)));
      sum /= 32760.0;
      break;
    case 2:
      for (float x : v) sum += x * x;  // each square in float, as llama.cpp sums them
      sum = std::sqrt(sum);
      break;
    default:  // the p-norm (1: taxicab)
      for (float x : v) sum += std::pow(std::fabs(double(x)), double(embd_normalize));
      sum = std::pow(sum, 1.0 / double(embd_normalize));
      break;
  }
  const float norm = sum > 0.0 ? float(1.0 / sum) : 0.0f;
  for (float& x : v) x *= norm;
}

void l2_normalize(std::vector<float>& v) {
  double sum_sq = 0.0;
  for (float x : v) sum_sq += double(x) * double(x);
  const double norm = std::max(std::sqrt(sum_sq), 1e-12);
  for (float& x : v) x = float(double(x) / norm);
}

std::string base64_f32(const std::vector<float>& v) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> bytes(v.size() * 4);
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v[i], 4);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + size_t(b)] = uint8_t(bits >> (8 * b));  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0u) |
                       (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0u);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

std::string embeddings_response(const std::vector<std::vector<float>>& vectors, EmbeddingEncoding encoding,
                                const std::string& model, int64_t prompt_tokens) {
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"},
                    {"index", i},
                    {"embedding", encoding == EmbeddingEncoding::kBase64 ? nlohmann::json(base64_f32(vectors[i]))
                                                                         : nlohmann::json(vectors[i])}});
  return json_text({{"object", "list"},
                    {"data", std::move(data)},
                    {"model", model},
                    {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}});
}

std::string llama_embedding_response(const std::vector<std::vector<float>>& vectors) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    out.push_back({{"index", i}, {"embedding", nlohmann::json::array({nlohmann::json(vectors[i])})}});
  return json_text(out);
}

}  // namespace pagoda::server
