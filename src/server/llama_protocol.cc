// llama-server's /completion request translation (to the OpenAI completion parameters) and its other objects.
#include "server/llama_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "core/ordered_json_parse.h"
#include "server/json_text.h"

namespace pagoda::server {
namespace {

using ojson = nlohmann::ordered_json;

// llama-server's name -> the OpenAI completion field it becomes.
constexpr std::pair<std::string_view, std::string_view> kLlamaMappedFields[] = {
    {"prompt", "prompt"},
    {"temperature", "temperature"},
    {"top_k", "top_k"},
    {"top_p", "top_p"},
    {"min_p", "min_p"},
    {"stop", "stop"},
    {"repeat_penalty", "repetition_penalty"},
    {"presence_penalty", "presence_penalty"},
    {"frequency_penalty", "frequency_penalty"},
    {"grammar", "grammar"},
    {"json_schema", "guided_json"},
    {"ignore_eos", "ignore_eos"},
    {"stream", "stream"},
};

constexpr std::string_view kLlamaNeutralFields[] = {
    "typical_p",      "dry_base",    "mirostat",     "dynatemp_range",      "xtc_probability",   "dry_multiplier",
    "n_indent",       "top_n_sigma", "n_cmpl",       "id_slot",             "post_sampling_probs", "timings_per_token",
    "return_progress", "cache_prompt"};

// Fields accepted at the value that changes nothing (llama-server's defaults); any other value is a 400.
bool llama_neutral(std::string_view key, const ojson& v) {
  auto is = [&](double x) { return v.is_number() && v.get<double>() == x; };
  if (key == "typical_p" || key == "dry_base") return is(1.0) || (key == "dry_base" && is(1.75));
  if (key == "mirostat" || key == "dynatemp_range" || key == "xtc_probability" || key == "dry_multiplier" ||
      key == "n_indent" || key == "top_n_sigma")
    return is(0.0) || (key == "top_n_sigma" && is(-1.0));
  if (key == "n_cmpl") return is(1.0);
  if (key == "id_slot") return is(-1.0);
  if (key == "post_sampling_probs" || key == "timings_per_token" || key == "return_progress")
    return v.is_boolean() && !v.get<bool>();
  if (key == "cache_prompt") return v.is_boolean();  // the prefix cache serves every request either way
  return false;
}

std::string llama_rename(std::string message) {
  for (const auto& [llama, openai] : kLlamaMappedFields) {
    if (llama == openai) continue;
    const std::string quoted = fmt::format("'{}'", openai);
    if (size_t at = message.find(quoted); at != std::string::npos)
      message.replace(at, quoted.size(), fmt::format("'{}'", llama));
  }
  return message;
}

}  // namespace

std::optional<ApiError> parse_llama_completion(std::string_view body_text, LlamaCompletionRequest* out) {
  if (json_nesting_exceeds(body_text, kMaxJsonDepth))
    return invalid_request(fmt::format("the request body is nested deeper than {} levels", kMaxJsonDepth));
  Result<ojson> parsed = parse_ordered_json(body_text);
  if (!parsed.ok() || !parsed->is_object()) return invalid_request("the request body must be a JSON object");
  const ojson& body = *parsed;
  LlamaCompletionRequest req;
  ojson openai = ojson::object();
  for (const auto& [key, value] : body.items()) {
    bool mapped = false;
    for (const auto& [llama, field] : kLlamaMappedFields)
      if (llama == key) {
        mapped = true;
        if (!value.is_null()) openai[std::string(field)] = value;
      }
    if (mapped) continue;
    if (key == "model" || value.is_null() || llama_neutral(key, value)) continue;
    if (key == "n_predict" || key == "max_tokens") {
      if (!value.is_number_integer()) return invalid_request(fmt::format("'{}' must be an integer", key), key);
      const int64_t n = value.get<int64_t>();
      if (n == -1) continue;  // to the context's end: the default below
      if (n < 1) return invalid_request(fmt::format("'{}' must be -1 or at least 1", key), key);
      openai["max_tokens"] = n;
    } else if (key == "seed") {
      if (!value.is_number_integer()) return invalid_request("'seed' must be an integer", key);
      // -1 and 0xFFFFFFFF are llama-server's "random".
      if (value.get<int64_t>() == -1 || value.get<int64_t>() == 0xFFFFFFFFll) continue;
      openai["seed"] = value;
    } else if (key == "n_probs") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > kMaxLogprobs)
        return invalid_request(fmt::format("'n_probs' must be an integer in [0, {}]", kMaxLogprobs), key);
      req.n_probs = int32_t(value.get<int64_t>());
      if (req.n_probs > 0) openai["logprobs"] = req.n_probs;
    } else if (key == "return_tokens") {
      if (!value.is_boolean()) return invalid_request("'return_tokens' must be a boolean", key);
      req.return_tokens = value.get<bool>();
    } else if (key == "logit_bias") {
      // llama-server's [[id, bias]] pairs (false: never) or an object of ids to biases.
      ojson bias = ojson::object();
      if (value.is_array()) {
        for (const ojson& pair : value) {
          if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() ||
              !(pair[1].is_number() || (pair[1].is_boolean() && !pair[1].get<bool>())))
            return invalid_request("'logit_bias' must hold [token id, bias or false] pairs", key);
          bias[std::to_string(pair[0].get<int64_t>())] = pair[1].is_boolean() ? ojson(-100) : pair[1];
        }
      } else if (value.is_object()) {
        for (const auto& [id, b] : value.items()) bias[id] = b.is_boolean() && !b.get<bool>() ? ojson(-100) : b;
      } else {
        return invalid_request("'logit_bias' must be an array of [id, bias] pairs or an object", key);
      }
      openai["logit_bias"] = std::move(bias);
    } else if (std::find(std::begin(kLlamaNeutralFields), std::end(kLlamaNeutralFields), key) !=
               std::end(kLlamaNeutralFields)) {
      return invalid_request(
          fmt::format("'{}' other than llama-server's default is not supported by this server", key), key);
    } else {
      return invalid_request(fmt::format("'{}' is not supported by this server's /completion", key), key);
    }
  }
  if (!openai.contains("prompt")) return invalid_request("'prompt' is required", "prompt");
  const ojson& prompt = openai["prompt"];
  if (!prompt.is_string() && !(prompt.is_array() && !prompt.empty() && prompt[0].is_number_integer()))
    return invalid_request("'prompt' must be a string or an array of token ids (one prompt per request here)",
                           "prompt");
  if (!openai.contains("temperature")) openai["temperature"] = kLlamaTemperature;
  if (!openai.contains("top_k")) openai["top_k"] = kLlamaTopK;
  if (!openai.contains("top_p")) openai["top_p"] = kLlamaTopP;
  if (!openai.contains("min_p")) openai["min_p"] = kLlamaMinP;
  if (auto it = openai.find("grammar"); it != openai.end() && it->is_string() && it->get<std::string>().empty())
    openai.erase("grammar");
  if (std::optional<ApiError> e = parse_completion_params(openai.dump(), false, &req.params)) {
    e->message = llama_rename(e->message);
    if (e->param == "guided_json") e->param = "json_schema";
    if (e->param == "repetition_penalty") e->param = "repeat_penalty";
    return e;
  }
  req.params.model.reset();  // llama-server answers whatever model a request names
  *out = std::move(req);
  return std::nullopt;
}

nlohmann::json llama_generation_settings(const SamplingParams& s, int32_t n_probs, bool stream) {
  return {{"n_predict", s.max_tokens},
          {"seed", s.seed ? nlohmann::json(*s.seed) : nlohmann::json(0xFFFFFFFFu)},
          {"temperature", s.temperature},
          {"top_k", s.top_k},
          {"top_p", s.top_p},
          {"min_p", s.min_p},
          {"repeat_penalty", s.repetition_penalty},
          {"presence_penalty", s.presence_penalty},
          {"frequency_penalty", s.frequency_penalty},
          {"stop", s.stop},
          {"ignore_eos", s.ignore_eos},
          {"n_probs", n_probs},
          {"stream", stream}};
}

std::string_view llama_stop_type(FinishReason reason, const std::string& stop_string) {
  if (reason == FinishReason::kLength) return "limit";
  if (reason == FinishReason::kStop) return stop_string.empty() ? "eos" : "word";
  return "none";
}

nlohmann::json llama_completion_probabilities(const std::vector<TokenLogprobInfo>& infos) {
  auto bytes = [](const std::string& t) { return std::vector<uint8_t>(t.begin(), t.end()); };
  nlohmann::json out = nlohmann::json::array();
  for (const TokenLogprobInfo& i : infos) {
    nlohmann::json top = nlohmann::json::array();
    for (const TopLogprob& t : i.top)
      top.push_back({{"id", t.id}, {"token", t.token}, {"bytes", bytes(t.token)}, {"logprob", t.logprob}});
    out.push_back({{"id", i.id},
                   {"token", i.token},
                   {"bytes", bytes(i.token)},
                   {"logprob", i.logprob.value_or(0.0f)},
                   {"top_logprobs", std::move(top)}});
  }
  return out;
}

std::string FimTokens::missing() const {
  std::string out;
  for (const auto& [name, id] : {std::pair<const char*, const std::optional<TokenId>&>{"fim_pre", pre},
                                 {"fim_suf", suf},
                                 {"fim_mid", mid}})
    if (!id) out += out.empty() ? name : std::string(", ") + name;
  return out;
}

std::optional<ApiError> split_llama_infill(std::string_view body_text, std::string* prefix, std::string* suffix,
                                           std::string* completion_body) {
  if (json_nesting_exceeds(body_text, kMaxJsonDepth))
    return invalid_request(fmt::format("the request body is nested deeper than {} levels", kMaxJsonDepth));
  Result<ojson> parsed = parse_ordered_json(body_text);
  if (!parsed.ok() || !parsed->is_object()) return invalid_request("the request body must be a JSON object");
  ojson body = std::move(*parsed);
  for (const auto& [key, out] : {std::pair<const char*, std::string*>{"input_prefix", prefix}, {"input_suffix", suffix}}) {
    auto it = body.find(key);
    if (it != body.end() && !it->is_null()) {
      if (!it->is_string()) return invalid_request(fmt::format("'{}' must be a string", key), key);
      *out = it->get<std::string>();
    }
    body.erase(key);
  }
  if (auto it = body.find("input_extra"); it != body.end()) {
    if (!it->is_null() && !(it->is_array() && it->empty()))
      return invalid_request("'input_extra' (other files' chunks) is not supported by this server's /infill",
                             "input_extra");
    body.erase("input_extra");
  }
  if (!body.contains("prompt")) body["prompt"] = "";
  *completion_body = body.dump();
  return std::nullopt;
}

std::vector<TokenId> llama_infill_tokens(const FimTokens& fim, std::optional<TokenId> bos,
                                         const std::vector<TokenId>& prefix, const std::vector<TokenId>& suffix,
                                         const std::vector<TokenId>& prompt) {
  std::vector<TokenId> out;
  if (bos) out.push_back(*bos);
  out.push_back(*fim.pre);
  out.insert(out.end(), prefix.begin(), prefix.end());
  out.push_back(*fim.suf);
  out.insert(out.end(), suffix.begin(), suffix.end());
  out.push_back(*fim.mid);
  out.insert(out.end(), prompt.begin(), prompt.end());
  return out;
}

std::string llama_props_json(const LlamaServerFacts& f) {
  SamplingParams defaults;
  defaults.temperature = kLlamaTemperature;
  defaults.top_k = kLlamaTopK;
  defaults.top_p = kLlamaTopP;
  defaults.min_p = kLlamaMinP;
  nlohmann::json params = llama_generation_settings(defaults, 0, false);
  params["n_predict"] = -1;
  return json_text({{"default_generation_settings", {{"id", 0}, {"n_ctx", f.n_ctx}, {"params", params}}},
                    {"total_slots", f.total_slots},
                    {"model_alias", f.model_name},
                    {"model_path", f.model_path},
                    {"chat_template", f.chat_template},
                    {"bos_token", f.bos_token},
                    {"eos_token", f.eos_token},
                    {"modalities", {{"vision", false}, {"audio", false}}},
                    {"build_info", "pagoda"}});
}

std::string llama_slots_json(const LlamaServerFacts& f) {
  // pagoda has no slots: the engine runs up to total_slots sequences at once, each with the whole context.
  nlohmann::json slots = nlohmann::json::array();
  for (int32_t i = 0; i < f.total_slots; ++i)
    slots.push_back({{"id", i}, {"n_ctx", f.n_ctx}, {"is_processing", i < f.busy_slots}});
  return json_text(slots);
}

}  // namespace pagoda::server
