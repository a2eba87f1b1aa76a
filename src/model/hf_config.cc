// Reads and writes Hugging Face config.json for the Llama family.
#include "model/hf_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "core/json_text.h"

namespace pagoda {
namespace {

using nlohmann::json;

using Limits = ModelConfigLimits;

struct Fields {
  const json& j;
  const std::string& path;

  // An integer in 1..max_value (config.json's sizes); the bound keeps a hostile file from sizing allocations.
  Result<int32_t> positive_int(const char* key, int32_t max_value = INT32_MAX) const {
    if (!j.contains(key)) return make_error(fmt::format("{}: missing field {}", path, key));
    const json& v = j[key];
    const bool in_range = v.is_number_unsigned()  ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= uint64_t(max_value)
                          : v.is_number_integer() ? v.get<int64_t>() >= 1 && v.get<int64_t>() <= max_value
                                                  : false;
    if (!in_range)
      return make_error(
          fmt::format("{}: {} must be an integer in 1..{}, got {}", path, key, max_value, json_excerpt(v)));
    return int32_t(v.get<int64_t>());
  }
  Result<int32_t> positive_int_or(const char* key, int32_t fallback, int32_t max_value = INT32_MAX) const {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    return positive_int(key, max_value);
  }
  // A finite number in (0, max_value]; max_value defaults to float's range, since most become floats.
  Result<double> positive_number_or(const json& obj, const char* key, double fallback, const std::string& prefix = "",
                                    double max_value = double(std::numeric_limits<float>::max())) const {
    if (!obj.contains(key) || obj[key].is_null()) return fallback;
    const json& v = obj[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= max_value))
      return make_error(fmt::format("{}: {}{} must be a positive number (at most {}), got {}", path, prefix, key,
                                    max_value, json_excerpt(v)));
    return v.get<double>();
  }
  Result<bool> bool_or(const char* key, bool fallback) const {
    if (!j.contains(key) || j[key].is_null()) return fallback;
    if (!j[key].is_boolean()) return make_error(fmt::format("{}: {} must be true or false", path, key));
    return j[key].get<bool>();
  }
  // bos/eos ids: an integer, or a list whose first entry is used (Llama 3.1 lists several EOS ids); -1 when
  // absent or null.
  Result<int32_t> token_id(const char* key) const {
    if (!j.contains(key) || j[key].is_null()) return -1;
    const json& v = j[key];
    const json& id = v.is_array() && !v.empty() ? v[0] : v;
    const bool valid = id.is_number_unsigned()  ? id.get<uint64_t>() <= uint64_t(INT32_MAX)
                       : id.is_number_integer() ? id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX
                                                : false;
    if (!valid)
      return make_error(
          fmt::format("{}: {} must be a token id (or a list of them), got {}", path, key, json_excerpt(v)));
    return int32_t(id.get<int64_t>());
  }
};

}  // namespace

std::vector<float> llama3_rope_freq_factors(double theta, int32_t rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, int32_t original_max_position_embeddings) {
  const double old_ctx = original_max_position_embeddings;
  const double low_freq_wavelen = old_ctx / low_freq_factor, high_freq_wavelen = old_ctx / high_freq_factor;
  std::vector<float> factors;
  for (int32_t i = 0; i < rope_dim / 2; ++i) {
    const double inv_freq = 1.0 / std::pow(theta, double(2 * i) / double(rope_dim));
    const double wavelen = 2.0 * std::numbers::pi / inv_freq;
    double f = 1.0;
    if (wavelen < high_freq_wavelen) {
      f = 1.0;  // high frequencies are kept
    } else if (wavelen > low_freq_wavelen) {
      f = factor;  // low frequencies are slowed by the whole factor
    } else {
      const double smooth = (old_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    factors.push_back(float(f));
  }
  return factors;
}

Result<HfConfig> parse_hf_config(const std::string& text, const std::string& path) {
  Result<json> parsed = parse_untrusted_json(text);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", path, parsed.error()));
  const json& j = *parsed;
  if (!j.is_object()) return make_error(fmt::format("{}: not a JSON object", path));
  HfConfig h;
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string())
    return make_error(fmt::format("{}: missing field architectures (e.g. [\"LlamaForCausalLM\"])", path));
  h.hf_architecture = j["architectures"][0].get<std::string>();
  ModelConfig& c = h.config;
  if (h.hf_architecture == "LlamaForCausalLM" || h.hf_architecture == "MistralForCausalLM") {
    c.architecture = "llama";
    h.permute_qk = true;
  } else if (h.hf_architecture == "Qwen2ForCausalLM") {
    c.architecture = "qwen2";
    h.qkv_bias = true;
  } else if (h.hf_architecture == "Qwen3ForCausalLM") {
    c.architecture = "qwen3";
    h.qk_norm = true;
  } else {
    return make_error(fmt::format(
        "{}: architectures[0] = \"{}\" is not supported (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
        "Qwen3ForCausalLM)",
        path, h.hf_architecture));
  }
  c.rope_neox = !h.permute_qk;
  const Fields f{j, path};
  PAGODA_ASSIGN_OR_RETURN(c.dim, f.positive_int("hidden_size", Limits::kMaxEmbeddingLength));
  PAGODA_ASSIGN_OR_RETURN(c.hidden_dim, f.positive_int("intermediate_size", Limits::kMaxFeedForwardLength));
  PAGODA_ASSIGN_OR_RETURN(c.num_layers, f.positive_int("num_hidden_layers", Limits::kMaxBlockCount));
  PAGODA_ASSIGN_OR_RETURN(c.num_heads, f.positive_int("num_attention_heads", Limits::kMaxHeadCount));
  PAGODA_ASSIGN_OR_RETURN(c.num_kv_heads, f.positive_int_or("num_key_value_heads", c.num_heads, c.num_heads));
  PAGODA_ASSIGN_OR_RETURN(c.vocab_size, f.positive_int("vocab_size", Limits::kMaxVocabSize));
  PAGODA_ASSIGN_OR_RETURN(h.max_position_embeddings,
                          f.positive_int_or("max_position_embeddings", 2048, Limits::kMaxContextLength));
  if (c.num_heads % c.num_kv_heads != 0)
    return make_error(fmt::format("{}: num_attention_heads {} is not a multiple of num_key_value_heads {}", path,
                                  c.num_heads, c.num_kv_heads));
  if (!j.contains("head_dim") && c.dim % c.num_heads != 0)
    return make_error(fmt::format("{}: hidden_size {} is not a multiple of num_attention_heads {} (and no head_dim)",
                                  path, c.dim, c.num_heads));
  PAGODA_ASSIGN_OR_RETURN(c.head_dim, f.positive_int_or("head_dim", c.dim / c.num_heads));
  if (c.head_dim % 2 != 0 || c.head_dim < 2 || c.head_dim > 512)
    return make_error(fmt::format("{}: head_dim {} must be even and in 2..512", path, c.head_dim));
  c.rope_dim = c.head_dim;
  PAGODA_ASSIGN_OR_RETURN(double eps, f.positive_number_or(j, "rms_norm_eps", 1e-6));
  PAGODA_ASSIGN_OR_RETURN(double theta, f.positive_number_or(j, "rope_theta", 10000.0));
  c.rms_eps = float(eps);
  c.rope_theta = float(theta);
  PAGODA_ASSIGN_OR_RETURN(h.tie_word_embeddings, f.bool_or("tie_word_embeddings", false));
  PAGODA_ASSIGN_OR_RETURN(bool attention_bias, f.bool_or("attention_bias", false));
  if (attention_bias) h.qkv_bias = true;
  c.context_length = h.max_position_embeddings;
  // Mistral's sliding window: attention within the window is plain causal attention, so capping the context at
  // the window keeps every result exact (a longer context would need windowed attention, not implemented).
  if (j.contains("sliding_window") && !j["sliding_window"].is_null()) {
    PAGODA_ASSIGN_OR_RETURN(bool use_sliding,
                            f.bool_or("use_sliding_window", h.hf_architecture == "MistralForCausalLM"));
    PAGODA_ASSIGN_OR_RETURN(int32_t window, f.positive_int("sliding_window", Limits::kMaxContextLength));
    if (use_sliding) {
      h.sliding_window = window;
      c.context_length = std::min(c.context_length, window);
    }
  }
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const json& rs = j["rope_scaling"];
    if (!rs.is_object()) return make_error(fmt::format("{}: rope_scaling must be an object or null", path));
    std::string type;
    if (rs.contains("rope_type") && rs["rope_type"].is_string())
      type = rs["rope_type"].get<std::string>();
    else if (rs.contains("type") && rs["type"].is_string())
      type = rs["type"].get<std::string>();
    else
      return make_error(fmt::format("{}: rope_scaling needs a string rope_type (or type)", path));
    if (type == "llama3") {
      PAGODA_ASSIGN_OR_RETURN(h.rope_scaling_factor, f.positive_number_or(rs, "factor", 8.0, "rope_scaling."));
      PAGODA_ASSIGN_OR_RETURN(h.low_freq_factor, f.positive_number_or(rs, "low_freq_factor", 1.0, "rope_scaling."));
      PAGODA_ASSIGN_OR_RETURN(h.high_freq_factor, f.positive_number_or(rs, "high_freq_factor", 4.0, "rope_scaling."));
      PAGODA_ASSIGN_OR_RETURN(double old_ctx, f.positive_number_or(rs, "original_max_position_embeddings", 8192,
                                                                   "rope_scaling.", Limits::kMaxContextLength));
      h.original_max_position_embeddings = int32_t(old_ctx);
      if (!(h.high_freq_factor > h.low_freq_factor))
        return make_error(fmt::format("{}: rope_scaling.high_freq_factor must exceed low_freq_factor", path));
      c.rope_freq_factors = llama3_rope_freq_factors(theta, c.rope_dim, h.rope_scaling_factor, h.low_freq_factor,
                                                     h.high_freq_factor, h.original_max_position_embeddings);
    } else if (type != "default") {
      return make_error(fmt::format("{}: rope_scaling type \"{}\" is not supported (llama3)", path, type));
    }
  }
  PAGODA_ASSIGN_OR_RETURN(h.bos_token_id, f.token_id("bos_token_id"));
  PAGODA_ASSIGN_OR_RETURN(h.eos_token_id, f.token_id("eos_token_id"));
  return h;
}

Result<HfConfig> read_hf_config(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  std::ifstream in(path);
  if (!in) return make_error(fmt::format("{}: cannot open (an HF model folder needs config.json)", path));
  std::stringstream text;
  text << in.rdbuf();
  return parse_hf_config(text.str(), path);
}

std::string hf_config_json(const HfConfig& h) {
  const ModelConfig& c = h.config;
  nlohmann::ordered_json j;
  j["architectures"] = {h.hf_architecture};
  j["model_type"] = c.architecture;
  j["hidden_size"] = c.dim;
  j["intermediate_size"] = c.hidden_dim;
  j["num_hidden_layers"] = c.num_layers;
  j["num_attention_heads"] = c.num_heads;
  j["num_key_value_heads"] = c.num_kv_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = h.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_eps;
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = h.tie_word_embeddings;
  j["attention_bias"] = h.qkv_bias;
  j["hidden_act"] = "silu";
  j["torch_dtype"] = "float32";
  if (h.bos_token_id >= 0) j["bos_token_id"] = h.bos_token_id;
  if (h.eos_token_id >= 0) j["eos_token_id"] = h.eos_token_id;
  if (h.rope_scaling_factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", h.rope_scaling_factor},
                         {"low_freq_factor", h.low_freq_factor},
                         {"high_freq_factor", h.high_freq_factor},
                         {"original_max_position_embeddings", h.original_max_position_embeddings}};
  else
    j["rope_scaling"] = nullptr;
  return j.dump(2) + "\n";
}

}  // namespace pagoda
