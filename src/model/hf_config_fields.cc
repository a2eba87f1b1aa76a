// HfConfigFields' typed reads.
#include "model/hf_config_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "core/json_text.h"

namespace pagoda {

Status HfConfigFields::error(const std::string& message) const {
  return make_error(fmt::format("{}: {}", path_, message));
}

Result<HfConfigFields> HfConfigFields::object(const char* key) const {
  if (!has(key) || !j_[key].is_object()) return error(fmt::format("{}{} must be an object", prefix_, key));
  return HfConfigFields(j_[key], path_, prefix_ + key + ".");
}

Result<int32_t> HfConfigFields::positive_int(const char* key, int32_t max_value) const {
  if (!j_.contains(key)) return error(fmt::format("missing field {}{}", prefix_, key));
  const nlohmann::json& v = j_[key];
  const bool in_range = v.is_number_unsigned()  ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= uint64_t(max_value)
                        : v.is_number_integer() ? v.get<int64_t>() >= 1 && v.get<int64_t>() <= max_value
                                                : false;
  if (!in_range)
    return error(fmt::format("{}{} must be an integer in 1..{}, got {}", prefix_, key, max_value, json_excerpt(v)));
  return int32_t(v.get<int64_t>());
}

Result<int32_t> HfConfigFields::positive_int_or(const char* key, int32_t fallback, int32_t max_value) const {
  if (!has(key)) return fallback;
  return positive_int(key, max_value);
}

Result<int32_t> HfConfigFields::int_or(const char* key, int32_t fallback, int32_t max_value) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  const bool in_range = v.is_number_unsigned()  ? v.get<uint64_t>() <= uint64_t(max_value)
                        : v.is_number_integer() ? v.get<int64_t>() >= 0 && v.get<int64_t>() <= max_value
                                                : false;
  if (!in_range)
    return error(fmt::format("{}{} must be an integer in 0..{}, got {}", prefix_, key, max_value, json_excerpt(v)));
  return int32_t(v.get<int64_t>());
}

Result<double> HfConfigFields::positive_number_or(const char* key, double fallback, double max_value) const {
  if (!has(key)) return fallback;
  const nlohmann::json& v = j_[key];
  if (!v.is_number() || !(v.get<double>() > 0) || !(v.get<double>() <= max_value))
    return error(
        fmt::format("{}{} must be a positive number (at most {}), got {}", prefix_, key, max_value, json_excerpt(v)));
  return v.get<double>();
}

Result<bool> HfConfigFields::bool_or(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_boolean()) return error(fmt::format("{}{} must be true or false", prefix_, key));
  return j_[key].get<bool>();
}

Result<std::string> HfConfigFields::string_or(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_string()) return error(fmt::format("{}{} must be a string", prefix_, key));
  return j_[key].get<std::string>();
}

Result<std::vector<float>> HfConfigFields::positive_numbers(const char* key, size_t size) const {
  if (!has(key) || !j_[key].is_array() || j_[key].size() != size)
    return error(fmt::format("{}{} must be a list of {} numbers", prefix_, key, size));
  std::vector<float> out;
  for (const nlohmann::json& v : j_[key]) {
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(float(v.get<double>())))
      return error(fmt::format("{}{} must hold positive numbers, got {}", prefix_, key, json_excerpt(v)));
    out.push_back(float(v.get<double>()));
  }
  return out;
}

Result<std::vector<std::string>> HfConfigFields::strings(const char* key) const {
  if (!has(key) || !j_[key].is_array()) return error(fmt::format("{}{} must be a list of strings", prefix_, key));
  std::vector<std::string> out;
  for (const nlohmann::json& v : j_[key]) {
    if (!v.is_string()) return error(fmt::format("{}{} must hold strings, got {}", prefix_, key, json_excerpt(v)));
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<std::string> HfConfigFields::rope_type() const {
  for (const char* key : {"rope_type", "type"})
    if (j_.contains(key) && j_[key].is_string()) return j_[key].get<std::string>();
  return error("rope_scaling needs a string rope_type (or type)");
}

Result<int32_t> HfConfigFields::token_id(const char* key) const {
  if (!has(key)) return -1;
  const nlohmann::json& v = j_[key];
  const nlohmann::json& id = v.is_array() && !v.empty() ? v[0] : v;
  const bool valid = id.is_number_unsigned()  ? id.get<uint64_t>() <= uint64_t(INT32_MAX)
                     : id.is_number_integer() ? id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX
                                              : false;
  if (!valid)
    return error(fmt::format("{}{} must be a token id (or a list of them), got {}", prefix_, key, json_excerpt(v)));
  return int32_t(id.get<int64_t>());
}

}  // namespace pagoda
