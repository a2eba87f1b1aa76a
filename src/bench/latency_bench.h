// run_latency_bench: one stream's latency figures on a loaded model, as llama-bench measures them: prefill
// throughput over a prompt of prompt_len tokens (pp512), decode throughput over gen tokens (tg128), TTFT, the
// TPOT distribution, and model bandwidth utilisation (MBU): bytes each decoded token must read (weights + KV)
// per TPOT, over the memory bandwidth measured right before and after the decode. The request runs through the
// Engine, the loop every other subcommand uses.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <pagoda/status.h>

#include "bench/kv_capacity.h"
#include "engine/engine_config.h"
#include "kv/kv_cache_view.h"
#include "loader/loaded_model.h"

namespace pagoda::bench {

// The fixed KV budget the report's capacity table fills: 1 GiB.
inline constexpr int64_t kKvCapacityBudgetBytes = int64_t(1) << 30;

struct LatencyOptions {
  int32_t prompt_len = 512;
  int32_t num_generated = 128;
  std::optional<double> membw_gbps;  // skip the bandwidth measurement and use this figure
  uint64_t seed = 1;                 // of the random prompt tokens
  KvCacheTypes kv_types;
  int32_t block_size = 16;      // kv_cache.block_size
  std::vector<TokenId> prompt;  // when not empty, the prompt (prompt_len is its size) instead of random tokens
  // Speculative decoding for the timed request (num_speculative_tokens 0 with method kNone: off).
  SpecDecodeConfig spec;
  int32_t num_speculative_tokens = 0;
  bool adaptive_num_speculative_tokens = false;
};

struct LatencyReport {
  int32_t prompt_len = 0;
  int32_t num_generated = 0;
  int32_t num_threads = 0;
  double prefill_tok_s = 0.0;
  double decode_tok_s = 0.0;
  double ttft_ms = 0.0;
  double tpot_ms_mean = 0.0;
  double tpot_ms_p50 = 0.0;
  double tpot_ms_p99 = 0.0;
  double weight_bytes_per_token = 0.0;  // every weight matrix once, plus one embedding row
  double kv_bytes_per_token = 0.0;      // K and V of the mean decode context
  KvCacheTypes kv_types;                 // the cache's
  int64_t kv_cache_bytes_per_token = 0;  // what one token of context takes in it
  bool kv_v_in_k = false;                // it holds K alone, V read from it (KvShape::v_in_k)
  // f32, f16, q8_0 and q4_0: bytes per token and sequences of prompt_len + num_generated in kKvCapacityBudgetBytes.
  std::vector<KvTypeCapacity> kv_capacity;
  double membw_gbps = 0.0;              // read-only stream, mean of before and after the decode
  double mbu = 0.0;                     // (weight + KV bytes per token) / TPOT / membw
  std::vector<TokenId> output;          // the generated tokens
  // CPU time of this process over the timed request (prefill included), per generated token: on a machine
  // shared with other work the wall clock stretches with the load, the CPU time much less.
  double cpu_us_per_token = 0.0;
  // Speculative decoding, over the timed request's decode: drafts verified and accepted, and decode steps
  // (tokens per step = (num_generated - 1) / num_decode_steps: the first token comes from the prefill).
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  int64_t num_decode_steps = 0;
  double step_fixed_us = 0.0;  // the engine's step-cost fit at the end (EngineStats)
  double step_per_token_us = 0.0;
};

// Bytes one token's decode step reads from the weights: every tensor in full, except that the token embedding is
// read one row per token unless it doubles as the output matrix, and a mixture of experts' stacked expert tensors
// (ffn_*_exps) in the share of `num_experts_used` of `num_experts` (0: not a mixture).
double weight_bytes_per_token(const format::GgufFile& file, int32_t vocab_size, int32_t num_experts = 0,
                              int32_t num_experts_used = 0);
// One request through an Engine of `num_threads` (0: one per core), sized for it alone. Errors: the engine's.
Result<LatencyReport> run_latency_bench(const LoadedModel& model, int32_t num_threads, const LatencyOptions& options);

}  // namespace pagoda::bench
