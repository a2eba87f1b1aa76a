// Reads and writes Hugging Face config.json: the fields every family shares here, the family's own through its
// HfFamily (model/architecture.h).
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
#include "model/architecture.h"
#include "model/hf_config_fields.h"
#include "model/rope_scaling.h"

namespace pagoda {

using Limits = ModelConfigLimits;

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
  Result<nlohmann::json> parsed = parse_untrusted_json(text);
  if (!parsed.ok()) return make_error(fmt::format("{}: {}", path, parsed.error()));
  nlohmann::json j = std::move(*parsed);
  if (!j.is_object()) return make_error(fmt::format("{}: not a JSON object", path));
  HfConfig h;
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty() ||
      !j["architectures"][0].is_string())
    return make_error(fmt::format("{}: missing field architectures (e.g. [\"LlamaForCausalLM\"])", path));
  h.hf_architecture = j["architectures"][0].get<std::string>();
  const HfFamily* family = find_hf_family(h.hf_architecture);
  if (family == nullptr && (family = find_multimodal_hf_family(h.hf_architecture)) != nullptr) {
    // The text model of a multimodal checkpoint: text_config's fields over the top level's.
    if (!j.contains("text_config") || !j["text_config"].is_object())
      return make_error(fmt::format("{}: {} needs a text_config object", path, h.hf_architecture));
    nlohmann::json text = std::move(j["text_config"]);
    j.erase("text_config");
    for (auto& [key, value] : text.items()) j[key] = std::move(value);
    h.multimodal_architecture = h.hf_architecture;
    h.hf_architecture = std::string(family->hf_architecture);
  }
  if (family == nullptr)
    return make_error(fmt::format("{}: architectures[0] = \"{}\" is not supported ({})", path, h.hf_architecture,
                                  supported_hf_architecture_names()));
  ModelConfig& c = h.config;
  c.architecture = std::string(family->gguf_architecture);
  c.rope_neox = find_architecture(c.architecture)->rope_neox;
  h.permute_qk = !c.rope_neox;  // HF rotates halves; llama.cpp's adjacent-pair families get permuted rows
  const HfConfigFields f(j, path);
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
  if (!f.has("head_dim") && c.dim % c.num_heads != 0)
    return make_error(fmt::format("{}: hidden_size {} is not a multiple of num_attention_heads {} (and no head_dim)",
                                  path, c.dim, c.num_heads));
  PAGODA_ASSIGN_OR_RETURN(c.head_dim, f.positive_int_or("head_dim", c.dim / c.num_heads));
  if (c.head_dim % 2 != 0 || c.head_dim < 2 || c.head_dim > 512)
    return make_error(fmt::format("{}: head_dim {} must be even and in 2..512", path, c.head_dim));
  c.rope_dim = c.head_dim;
  PAGODA_ASSIGN_OR_RETURN(double eps, f.positive_number_or("rms_norm_eps", 1e-6));
  PAGODA_ASSIGN_OR_RETURN(double theta, f.positive_number_or("rope_theta", 10000.0));
  c.rms_eps = float(eps);
  c.rope_theta = float(theta);
  PAGODA_ASSIGN_OR_RETURN(h.tie_word_embeddings, f.bool_or("tie_word_embeddings", false));
  PAGODA_ASSIGN_OR_RETURN(bool attention_bias, f.bool_or("attention_bias", false));
  if (attention_bias) h.qkv_bias = true;
  c.context_length = h.max_position_embeddings;
  c.rope_original_context = h.max_position_embeddings;
  // rope_scaling, or transformers' newer rope_parameters (which may hold rope_theta too).
  // rope_parameters per layer type (Gemma 4's {"sliding_attention": ..., "full_attention": ...}) is the family's.
  bool per_type_rope = false;
  if (f.has("rope_parameters")) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rp, f.object("rope_parameters"));
    per_type_rope = rp.has("full_attention");
  }
  const char* scaling_field = f.has("rope_scaling")                      ? "rope_scaling"
                              : f.has("rope_parameters") && !per_type_rope ? "rope_parameters"
                                                                         : nullptr;
  if (scaling_field != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(const HfConfigFields rs, f.object(scaling_field));
    PAGODA_ASSIGN_OR_RETURN(const std::string type, rs.rope_type());
    if (!f.has("rope_theta") && rs.has("rope_theta")) {
      PAGODA_ASSIGN_OR_RETURN(theta, rs.positive_number_or("rope_theta", 10000.0));
      c.rope_theta = float(theta);
    }
    if (type == "yarn") {
      // As llama.cpp's converter writes it: factor, original context, the betas; extrapolation_factor and
      // attention_factor as yarn_ext_factor and yarn_attn_factor; ministral3's mscale_all_dim as the log multiplier.
      PAGODA_ASSIGN_OR_RETURN(const double factor, rs.positive_number_or("factor", 1.0));
      c.rope_scaling = RopeScalingType::kYarn;
      c.rope_freq_scale = float(1.0 / factor);
      PAGODA_ASSIGN_OR_RETURN(c.rope_original_context,
                              rs.positive_int_or("original_max_position_embeddings", h.max_position_embeddings,
                                                 Limits::kMaxContextLength));
      PAGODA_ASSIGN_OR_RETURN(const double beta_fast, rs.positive_number_or("beta_fast", 32.0));
      PAGODA_ASSIGN_OR_RETURN(const double beta_slow, rs.positive_number_or("beta_slow", 1.0));
      c.yarn_beta_fast = float(beta_fast);
      c.yarn_beta_slow = float(beta_slow);
      if (rs.has("extrapolation_factor")) {
        PAGODA_ASSIGN_OR_RETURN(const double ext, rs.positive_number_or("extrapolation_factor", 1.0, 1.0));
        c.yarn_ext_factor = float(ext);
      }
      const char* attn = rs.has("attention_factor") ? "attention_factor" : "attn_factor";
      PAGODA_ASSIGN_OR_RETURN(const double attn_factor, rs.positive_number_or(attn, 1.0));
      c.yarn_attn_factor = float(attn_factor);
      if (h.hf_architecture == "Ministral3ForCausalLM") {
        PAGODA_ASSIGN_OR_RETURN(const double log_mul, rs.positive_number_or("mscale_all_dim", 1.0));
        c.yarn_log_multiplier = float(log_mul);
      }
      PAGODA_RETURN_IF_ERROR(check_rope_scaling(c, path + ": rope_scaling"));
    } else if (type == "llama3") {
      PAGODA_ASSIGN_OR_RETURN(h.rope_scaling_factor, rs.positive_number_or("factor", 8.0));
      PAGODA_ASSIGN_OR_RETURN(h.low_freq_factor, rs.positive_number_or("low_freq_factor", 1.0));
      PAGODA_ASSIGN_OR_RETURN(h.high_freq_factor, rs.positive_number_or("high_freq_factor", 4.0));
      PAGODA_ASSIGN_OR_RETURN(
          double old_ctx, rs.positive_number_or("original_max_position_embeddings", 8192, Limits::kMaxContextLength));
      h.original_max_position_embeddings = int32_t(old_ctx);
      if (!(h.high_freq_factor > h.low_freq_factor))
        return make_error(fmt::format("{}: rope_scaling.high_freq_factor must exceed low_freq_factor", path));
      c.rope_freq_factors = llama3_rope_freq_factors(theta, c.rope_dim, h.rope_scaling_factor, h.low_freq_factor,
                                                     h.high_freq_factor, h.original_max_position_embeddings);
    } else if (type != "default" && std::string(family->rope_scaling_types).find(type) == std::string::npos) {
      return make_error(fmt::format("{}: rope_scaling type \"{}\" is not supported for {} (llama3, yarn{}{})", path, type,
                                    h.hf_architecture, *family->rope_scaling_types ? ", " : "",
                                    family->rope_scaling_types));
    }
  }
  if (family->read_config != nullptr) PAGODA_RETURN_IF_ERROR(family->read_config(f, h));
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
  if (c.rope_scaling == RopeScalingType::kYarn) {
    j["rope_scaling"] = {{"rope_type", "yarn"},
                         {"factor", 1.0 / double(c.rope_freq_scale)},
                         {"original_max_position_embeddings", c.rope_original_context},
                         {"beta_fast", c.yarn_beta_fast},
                         {"beta_slow", c.yarn_beta_slow}};
    if (c.yarn_log_multiplier != 0.0f) j["rope_scaling"]["mscale_all_dim"] = c.yarn_log_multiplier;
  } else if (h.rope_scaling_factor > 0)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", h.rope_scaling_factor},
                         {"low_freq_factor", h.low_freq_factor},
                         {"high_freq_factor", h.high_freq_factor},
                         {"original_max_position_embeddings", h.original_max_position_embeddings}};
  else
    j["rope_scaling"] = nullptr;
  const HfFamily* family = find_hf_family(h.hf_architecture);
  if (family != nullptr && family->write_config != nullptr) family->write_config(h, j);
  return j.dump(2) + "\n";
}

}  // namespace pagoda
