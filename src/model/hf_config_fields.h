// HfConfigFields: typed, bounded reads of one config.json object (or a nested one, such as rope_scaling), each error
// naming the file and field. Used by parse_hf_config and the families' read_config; borrows the JSON.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pagoda {

class HfConfigFields {
 public:
  // `prefix` is put before each field name in errors ("rope_scaling.").
  HfConfigFields(const nlohmann::json& object, const std::string& path, std::string prefix = "")
      : j_(object), path_(path), prefix_(std::move(prefix)) {}

  const nlohmann::json& json() const { return j_; }
  const std::string& path() const { return path_; }
  // True when the field is present and not null.
  bool has(const char* key) const { return j_.contains(key) && !j_[key].is_null(); }
  // The nested object `key` (must be an object).
  Result<HfConfigFields> object(const char* key) const;

  // An integer in 1..max_value (config.json's sizes); the bound keeps a hostile file from sizing allocations.
  Result<int32_t> positive_int(const char* key, int32_t max_value = INT32_MAX) const;
  Result<int32_t> positive_int_or(const char* key, int32_t fallback, int32_t max_value = INT32_MAX) const;
  // An integer in 0..max_value, or `fallback` when absent or null.
  Result<int32_t> int_or(const char* key, int32_t fallback, int32_t max_value = INT32_MAX) const;
  // A finite number in (0, max_value]; max_value defaults to float's range, since most become floats.
  Result<double> positive_number_or(const char* key, double fallback,
                                    double max_value = double(std::numeric_limits<float>::max())) const;
  Result<bool> bool_or(const char* key, bool fallback) const;
  Result<std::string> string_or(const char* key, const std::string& fallback) const;
  // A list of positive finite numbers of exactly `size` entries.
  Result<std::vector<float>> positive_numbers(const char* key, size_t size) const;
  // A list of strings (e.g. layer_types).
  Result<std::vector<std::string>> strings(const char* key) const;
  // rope_scaling's type: "rope_type", or the older "type" (a string either way).
  Result<std::string> rope_type() const;
  // bos/eos ids: an integer, or a list whose first entry is used (Llama 3.1 lists several EOS ids); -1 when
  // absent or null.
  Result<int32_t> token_id(const char* key) const;

  Status error(const std::string& message) const;  // "PATH: message"

 private:
  const nlohmann::json& j_;
  const std::string& path_;
  std::string prefix_;
};

}  // namespace pagoda
