// PagodaConfig: the typed, validated configuration of every subcommand, read from a JSON file (--config) and
// then overridden by flags in the CLI layer. A plain value; parsing and validation live in config.cc.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

struct KvCacheConfig {
  int32_t max_entries = 0;     // KV blocks in the pool; 0 = auto (from the memory budget)
  int32_t block_size = 16;      // tokens per block, [1, 1024], a power of two
  std::string dtype = "f16";  // K and V: f32 | f16 | bf16 | q8_0 | q4_0 | int8
  std::string type_k;         // K alone, overriding dtype (llama.cpp's --cache-type-k); empty: dtype
  std::string type_v;         // V alone (--cache-type-v); empty: dtype
};

struct ParallelConfig {
  int32_t tensor_parallel = 1;    // [1, 64]
  int32_t pipeline_parallel = 1;  // [1, 64]
};

// Latency targets of the engine's automatic prefill budget (engine/prefill_budget.h); pagoda tune's SLOs.
struct SloConfig {
  double ttft_ms = 0.0;  // 0 = none; else (0, 1e7]
  double tpot_ms = 0.0;
};

struct PagodaConfig {
  std::string model;                  // model path; "" = the bundled stories260K
  std::string quantization = "none";  // none (weights as stored) | q8_0 | q4_0 | int8 | awq-int4, at load
  int32_t max_seq_len = 0;            // 0 = the model's context length; else [1, 1048576]
  std::optional<int32_t> batch_size;  // nullopt = "auto"; else [1, 4096]
  int32_t threads = 0;                // 0 = all cores; else [1, 1024]
  KvCacheConfig kv_cache;
  ParallelConfig parallel;
  SloConfig slo;
};

// Parses JSON text. Every key is optional; the top level must be an object. Unknown keys, wrong types and
// out-of-range values are errors naming the key path: "config.json: kv_cache.block_size: expected an integer,
// got a string", "config.json: kv_cache.block_size: must be a power of two in [1, 1024], got 3". Integers are
// integral JSON numbers (4096 and 4096.0 are accepted, 1.5 is not).
Result<PagodaConfig> parse_config(std::string_view json_text, std::string_view source_name);
// Reads and parses a file ("cannot read config FILE: No such file or directory").
Result<PagodaConfig> load_config_file(const std::string& path);
// Re-checks ranges after flags were applied (same messages as parse_config, naming the key, without the
// file name in front).
Status validate_config(const PagodaConfig& config);
// The effective configuration as pretty JSON (2-space indent) in the file's shape and key order, every key
// present: batch_size "auto" when unset, model "" for the bundled model (the actual string, never a label).
std::string config_to_json(const PagodaConfig& config);
// The settings a subcommand that runs one sequence at a time (run, bench latency) has no use for (batch_size,
// kv_cache.max_entries), each as "KEY = VALUE: SUBCOMMAND runs one sequence at a time; not used".
std::vector<std::string> unused_by_single_sequence(const PagodaConfig& config, std::string_view subcommand);

}  // namespace pagoda
