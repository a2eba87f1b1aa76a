// PagodaConfig parsing, validation and printing. Every range and allowed value lives once in the rule tables
// below, so parse_config (JSON file) and validate_config (after CLI overrides) report the same message for
// the same bad value. nlohmann::json exceptions never leave this file.
#include "core/config.h"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "core/block_size.h"

namespace pagoda {
namespace {

using nlohmann::json;

// Deeper than any valid config (which nests 2 levels); stops a hostile file from building a huge tree.
constexpr int kMaxJsonDepth = 32;

constexpr std::array<std::string_view, 5> kQuantizations = {"none", "q8_0", "q4_0", "int8", "awq-int4"};
constexpr std::array<std::string_view, 6> kKvDtypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "int8"};

constexpr std::array<std::string_view, 8> kTopLevelKeys = {"model",   "quantization", "max_seq_len", "batch_size",
                                                           "threads", "kv_cache",     "parallel",    "slo"};
constexpr std::array<std::string_view, 5> kKvCacheKeys = {"max_entries", "block_size", "dtype", "type_k", "type_v"};
constexpr std::array<std::string_view, 2> kParallelKeys = {"tensor_parallel", "pipeline_parallel"};
constexpr std::array<std::string_view, 2> kSloKeys = {"ttft_ms", "tpot_ms"};
constexpr double kMaxSloMs = 1e7;

struct IntRule {
  std::string_view path;
  int64_t min;
  int64_t max;
  bool power_of_two = false;
};

constexpr IntRule kMaxSeqLen{"max_seq_len", 0, 1048576};
constexpr IntRule kBatchSize{"batch_size", 1, 4096};
constexpr IntRule kThreads{"threads", 0, 1024};
constexpr IntRule kMaxEntries{"kv_cache.max_entries", 0, std::numeric_limits<int32_t>::max()};
constexpr IntRule kBlockSizeRule{"kv_cache.block_size", 1, kMaxBlockSize, true};  // is_valid_block_size
constexpr IntRule kTensorParallel{"parallel.tensor_parallel", 1, 64};
constexpr IntRule kPipelineParallel{"parallel.pipeline_parallel", 1, 64};

// JSON spelling of a string for messages; replace keeps invalid UTF-8 from a CLI flag from throwing.
std::string quoted(std::string_view s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string join(std::span<const std::string_view> names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

// "a string", "an integer", ...: the noun in "expected an integer, got a string".
std::string_view json_type_noun(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return "an unknown value";
  }
}

bool is_power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// `shown` is how the value is printed when it is not simply `value` (a JSON number that did not fit int64).
Status check_int(const IntRule& rule, int64_t value, std::string_view shown = {}) {
  const bool in_range = value >= rule.min && value <= rule.max;
  if (in_range && (!rule.power_of_two || is_power_of_two(value))) return Status();
  const std::string printed = shown.empty() ? std::to_string(value) : std::string(shown);
  return make_error(fmt::format("{}: must be {} in [{}, {}], got {}", rule.path,
                                rule.power_of_two ? "a power of two" : "an integer", rule.min, rule.max, printed));
}

Status check_batch_size(const std::optional<int32_t>& batch_size) {
  if (!batch_size || (*batch_size >= kBatchSize.min && *batch_size <= kBatchSize.max)) return Status();
  return make_error(fmt::format("batch_size: must be \"auto\" or an integer in [{}, {}], got {}", kBatchSize.min,
                                kBatchSize.max, *batch_size));
}

Status check_enum(std::string_view path, std::span<const std::string_view> allowed, std::string_view value) {
  for (std::string_view name : allowed) {
    if (name == value) return Status();
  }
  return make_error(fmt::format("{}: must be one of {}; got {}", path, join(allowed), quoted(value)));
}

// An integral JSON number as int64. 4096.0 counts as an integer (JSON does not distinguish), 1.5 does not.
// Integral values too large for int64 saturate so that the range check reports them.
Result<int64_t> json_to_int(std::string_view path, const json& value) {
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<int64_t>();
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    return u > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max() : int64_t(u);
  }
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) {
      if (d >= 9.2e18) return std::numeric_limits<int64_t>::max();
      if (d <= -9.2e18) return std::numeric_limits<int64_t>::min();
      return int64_t(d);
    }
    return make_error(fmt::format("{}: expected an integer, got {}", path, value.dump()));
  }
  return make_error(fmt::format("{}: expected an integer, got {}", path, json_type_noun(value)));
}

Result<int32_t> read_int(const IntRule& rule, const json& value) {
  PAGODA_ASSIGN_OR_RETURN(int64_t v, json_to_int(rule.path, value));
  // A float or a saturated integer is shown as written, not as its int64 stand-in.
  const bool saturated = value.is_number_unsigned() && uint64_t(v) != value.get<uint64_t>();
  const bool exact = value.is_number_integer() && !saturated;
  PAGODA_RETURN_IF_ERROR(check_int(rule, v, exact ? std::string() : value.dump()));
  return int32_t(v);  // every rule's range fits int32
}

Result<std::string> read_string(std::string_view path, const json& value) {
  if (!value.is_string()) {
    return make_error(fmt::format("{}: expected a string, got {}", path, json_type_noun(value)));
  }
  return value.get<std::string>();
}

Result<std::string> read_enum(std::string_view path, std::span<const std::string_view> allowed, const json& value) {
  if (!value.is_string()) {
    return make_error(
        fmt::format("{}: expected a string (one of {}), got {}", path, join(allowed), json_type_noun(value)));
  }
  std::string s = value.get<std::string>();
  PAGODA_RETURN_IF_ERROR(check_enum(path, allowed, s));
  return s;
}

Result<std::optional<int32_t>> read_batch_size(const json& value) {
  if (value.is_string()) {
    if (value.get<std::string>() == "auto") return std::optional<int32_t>();
    return make_error(fmt::format("batch_size: must be \"auto\" or an integer in [{}, {}], got {}", kBatchSize.min,
                                  kBatchSize.max, value.dump()));
  }
  if (!value.is_number()) {
    return make_error(fmt::format("batch_size: expected \"auto\" or an integer, got {}", json_type_noun(value)));
  }
  PAGODA_ASSIGN_OR_RETURN(int32_t v, read_int(kBatchSize, value));
  return std::optional<int32_t>(v);
}

// A key as it appears in a message: bare when it is plain text, JSON-quoted when it holds control characters,
// quotes or dots that would make the printed path ambiguous.
std::string key_text(std::string_view key) {
  for (unsigned char c : key) {
    if (c < 0x20 || c == 0x7f || c == '"' || c == '.' || c == '\\') return quoted(key);
  }
  return key.empty() ? quoted(key) : std::string(key);
}

// Rejects keys not in `allowed`, naming the full path ("kv_cache.pagesize") and the keys allowed there.
Status check_keys(std::string_view prefix, const json& object, std::span<const std::string_view> allowed) {
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    bool known = false;
    for (std::string_view name : allowed) known = known || name == key;
    if (known) continue;
    const std::string level = prefix.empty() ? "at the top level" : fmt::format("in {}", prefix);
    return make_error(fmt::format("{}{}: unknown key; allowed keys {}: {}",
                                  prefix.empty() ? "" : fmt::format("{}.", prefix), key_text(key), level,
                                  join(allowed)));
  }
  return Status();
}

Status read_kv_cache(const json& value, KvCacheConfig& kv) {
  if (!value.is_object()) return make_error(fmt::format("kv_cache: expected an object, got {}", json_type_noun(value)));
  PAGODA_RETURN_IF_ERROR(check_keys("kv_cache", value, kKvCacheKeys));
  if (auto it = value.find("max_entries"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(kv.max_entries, read_int(kMaxEntries, *it));
  }
  if (auto it = value.find("block_size"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(kv.block_size, read_int(kBlockSizeRule, *it));
  }
  if (auto it = value.find("dtype"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(kv.dtype, read_enum("kv_cache.dtype", kKvDtypes, *it));
  }
  if (auto it = value.find("type_k"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(kv.type_k, read_enum("kv_cache.type_k", kKvDtypes, *it));
  }
  if (auto it = value.find("type_v"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(kv.type_v, read_enum("kv_cache.type_v", kKvDtypes, *it));
  }
  return Status();
}

Status read_parallel(const json& value, ParallelConfig& parallel) {
  if (!value.is_object()) return make_error(fmt::format("parallel: expected an object, got {}", json_type_noun(value)));
  PAGODA_RETURN_IF_ERROR(check_keys("parallel", value, kParallelKeys));
  if (auto it = value.find("tensor_parallel"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(parallel.tensor_parallel, read_int(kTensorParallel, *it));
  }
  if (auto it = value.find("pipeline_parallel"); it != value.end()) {
    PAGODA_ASSIGN_OR_RETURN(parallel.pipeline_parallel, read_int(kPipelineParallel, *it));
  }
  return Status();
}

Status check_slo_ms(std::string_view path, double v) {
  if (!(v >= 0.0 && v <= kMaxSloMs))
    return make_error(fmt::format("{}: must be milliseconds in [0, {:g}] (0 = none), got {:g}", path, kMaxSloMs, v));
  return Status();
}

Status read_slo(const json& value, SloConfig& slo) {
  if (!value.is_object()) return make_error(fmt::format("slo: expected an object, got {}", json_type_noun(value)));
  PAGODA_RETURN_IF_ERROR(check_keys("slo", value, kSloKeys));
  for (const auto& [key, field] : {std::pair{"ttft_ms", &slo.ttft_ms}, std::pair{"tpot_ms", &slo.tpot_ms}}) {
    auto it = value.find(key);
    if (it == value.end()) continue;
    const std::string path = fmt::format("slo.{}", key);
    if (!it->is_number()) return make_error(fmt::format("{}: expected a number, got {}", path, json_type_noun(*it)));
    *field = it->get<double>();
    PAGODA_RETURN_IF_ERROR(check_slo_ms(path, *field));
  }
  return Status();
}

// Everything after the JSON text is parsed; messages here carry no source name yet.
Result<PagodaConfig> config_from_json(const json& root) {
  if (!root.is_object()) {
    return make_error(fmt::format("expected a JSON object at the top level, got {}", json_type_noun(root)));
  }
  PAGODA_RETURN_IF_ERROR(check_keys("", root, kTopLevelKeys));
  PagodaConfig config;
  if (auto it = root.find("model"); it != root.end()) {
    PAGODA_ASSIGN_OR_RETURN(config.model, read_string("model", *it));
  }
  if (auto it = root.find("quantization"); it != root.end()) {
    PAGODA_ASSIGN_OR_RETURN(config.quantization, read_enum("quantization", kQuantizations, *it));
  }
  if (auto it = root.find("max_seq_len"); it != root.end()) {
    PAGODA_ASSIGN_OR_RETURN(config.max_seq_len, read_int(kMaxSeqLen, *it));
  }
  if (auto it = root.find("batch_size"); it != root.end()) {
    PAGODA_ASSIGN_OR_RETURN(config.batch_size, read_batch_size(*it));
  }
  if (auto it = root.find("threads"); it != root.end()) {
    PAGODA_ASSIGN_OR_RETURN(config.threads, read_int(kThreads, *it));
  }
  if (auto it = root.find("kv_cache"); it != root.end()) {
    PAGODA_RETURN_IF_ERROR(read_kv_cache(*it, config.kv_cache));
  }
  if (auto it = root.find("parallel"); it != root.end()) {
    PAGODA_RETURN_IF_ERROR(read_parallel(*it, config.parallel));
  }
  if (auto it = root.find("slo"); it != root.end()) {
    PAGODA_RETURN_IF_ERROR(read_slo(*it, config.slo));
  }
  return config;
}

// "at line L, column C: what went wrong" from nlohmann's message, which starts with an id we do not show.
std::string describe_parse_error(const json::parse_error& e, std::string_view text) {
  std::string_view what = e.what();
  constexpr std::string_view kMarker = "parse error at ";
  if (size_t at = what.find(kMarker);
      at != std::string_view::npos && what.substr(at + kMarker.size()).starts_with("line ")) {
    return std::string(what.substr(at + kMarker.size()));
  }
  // Fallback: locate the byte ourselves (e.byte is 1-based, the last character read).
  size_t line = 1, column = 1;
  for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string_view detail = what;
  if (size_t colon = what.find(": "); colon != std::string_view::npos) detail = what.substr(colon + 2);
  return fmt::format("line {}, column {}: {}", line, column, detail);
}

}  // namespace

Result<PagodaConfig> parse_config(std::string_view json_text, std::string_view source_name) {
  bool too_deep = false;
  json root;
  try {
    root = json::parse(
        json_text,
        [&too_deep](int depth, json::parse_event_t event, json&) {
          if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
              depth >= kMaxJsonDepth) {
            too_deep = true;
            return false;  // discard: the deep part is never built
          }
          return true;
        },
        /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const json::parse_error& e) {
    return make_error(fmt::format("{}: invalid JSON at {}", source_name, describe_parse_error(e, json_text)));
  } catch (const json::exception& e) {
    return make_error(fmt::format("{}: invalid JSON: {}", source_name, e.what()));
  }
  if (too_deep) {
    return make_error(fmt::format("{}: invalid JSON: nested deeper than {} levels", source_name, kMaxJsonDepth));
  }
  Result<PagodaConfig> config = config_from_json(root);
  if (!config.ok()) return make_error(fmt::format("{}: {}", source_name, config.error()));
  return config;
}

Result<PagodaConfig> load_config_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return make_error(fmt::format("cannot read config {}: {}", path, std::strerror(errno)));
  std::string text;
  char buffer[1 << 16];
  size_t num_read;
  while ((num_read = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, num_read);
  // A directory opens fine on Linux and fails only on read (EISDIR).
  const bool failed = std::ferror(file) != 0;
  const int read_errno = errno;
  std::fclose(file);
  if (failed) return make_error(fmt::format("cannot read config {}: {}", path, std::strerror(read_errno)));
  return parse_config(text, path);
}

Status validate_config(const PagodaConfig& config) {
  PAGODA_RETURN_IF_ERROR(check_enum("quantization", kQuantizations, config.quantization));
  PAGODA_RETURN_IF_ERROR(check_int(kMaxSeqLen, config.max_seq_len));
  PAGODA_RETURN_IF_ERROR(check_batch_size(config.batch_size));
  PAGODA_RETURN_IF_ERROR(check_int(kThreads, config.threads));
  PAGODA_RETURN_IF_ERROR(check_int(kMaxEntries, config.kv_cache.max_entries));
  PAGODA_RETURN_IF_ERROR(check_int(kBlockSizeRule, config.kv_cache.block_size));
  PAGODA_RETURN_IF_ERROR(check_enum("kv_cache.dtype", kKvDtypes, config.kv_cache.dtype));
  if (!config.kv_cache.type_k.empty())
    PAGODA_RETURN_IF_ERROR(check_enum("kv_cache.type_k", kKvDtypes, config.kv_cache.type_k));
  if (!config.kv_cache.type_v.empty())
    PAGODA_RETURN_IF_ERROR(check_enum("kv_cache.type_v", kKvDtypes, config.kv_cache.type_v));
  PAGODA_RETURN_IF_ERROR(check_int(kTensorParallel, config.parallel.tensor_parallel));
  PAGODA_RETURN_IF_ERROR(check_int(kPipelineParallel, config.parallel.pipeline_parallel));
  PAGODA_RETURN_IF_ERROR(check_slo_ms("slo.ttft_ms", config.slo.ttft_ms));
  PAGODA_RETURN_IF_ERROR(check_slo_ms("slo.tpot_ms", config.slo.tpot_ms));
  return Status();
}

std::string config_to_json(const PagodaConfig& config) {
  // ordered_json keeps the keys in the file's order rather than sorting them.
  nlohmann::ordered_json out;
  out["model"] = config.model;
  out["quantization"] = config.quantization;
  out["max_seq_len"] = config.max_seq_len;
  if (config.batch_size) {
    out["batch_size"] = *config.batch_size;
  } else {
    out["batch_size"] = "auto";
  }
  out["threads"] = config.threads;
  out["kv_cache"]["max_entries"] = config.kv_cache.max_entries;
  out["kv_cache"]["block_size"] = config.kv_cache.block_size;
  out["kv_cache"]["dtype"] = config.kv_cache.dtype;
  if (!config.kv_cache.type_k.empty()) out["kv_cache"]["type_k"] = config.kv_cache.type_k;
  if (!config.kv_cache.type_v.empty()) out["kv_cache"]["type_v"] = config.kv_cache.type_v;
  out["parallel"]["tensor_parallel"] = config.parallel.tensor_parallel;
  out["parallel"]["pipeline_parallel"] = config.parallel.pipeline_parallel;
  out["slo"]["ttft_ms"] = config.slo.ttft_ms;
  out["slo"]["tpot_ms"] = config.slo.tpot_ms;
  return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::vector<std::string> unused_by_single_sequence(const PagodaConfig& config, std::string_view subcommand) {
  std::vector<std::string> lines;
  auto add = [&lines, subcommand](std::string_view key, const std::string& value) {
    lines.push_back(fmt::format("{} = {}: {} runs one sequence at a time; not used", key, value, subcommand));
  };
  if (config.batch_size) add("batch_size", std::to_string(*config.batch_size));
  if (config.kv_cache.max_entries != 0) add("kv_cache.max_entries", std::to_string(config.kv_cache.max_entries));
  return lines;
}

}  // namespace pagoda
