// The one policy that turns what a user asks of an engine (EngineSettings: context, threads, KV precision and block
// size, pool size or budget, batch and step limits) into an EngineConfig and its KV pool plan. Every front end calls
// it: the CLI's serve and engine benchmarks (cli/engine_options.cc), the public API (api/generator.cc), and the
// one-sequence runs (run, bench latency). Pure: the free RAM is an argument, nothing is read here.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>

#include "engine/engine_config.h"
#include "engine/kv_pool_plan.h"
#include "model/model_config.h"

namespace pagoda {

// Tokens per step unless told otherwise: on 2 cores a step of 128 tokens of a 1B model takes a few seconds of
// prefill at most, which bounds how long running streams wait for a chunk.
inline constexpr int32_t kDefaultMaxBatchedTokens = 128;
// A hybrid model's state snapshots by default: this many, fewer where they would take more than a quarter of the KV
// pool's bytes (a snapshot is a whole per-sequence state), one at least.
inline constexpr int32_t kDefaultStateSnapshots = 32;
// threads = 0 ("all cores") becomes 1 for a model under kMinParamsPerExtraThread weights: splitting its tiny
// matmuls costs more in barriers than it buys (stories260K: 1 thread decodes faster than 2, and far faster when
// the cores are shared). An explicit count is kept.
inline constexpr int64_t kMinParamsPerExtraThread = 4'000'000;

struct EngineSettings {
  int32_t max_seq_len = 0;  // 0 = the model's context length
  int32_t num_threads = 0;  // 0 = one per core, or 1 for a tiny model (see kMinParamsPerExtraThread)
  KvCacheTypes kv_types;  // K and V (default f16)
  int32_t block_size = 16;  // tokens per KV block: a power of two in [1, 1024]
  int32_t kv_blocks = 0;    // > 0: exactly this many blocks
  std::optional<double> kv_memory_gib;          // else: this budget; else a share of the free RAM
  std::optional<int32_t> max_num_seqs;          // nullopt = as many as there are blocks and step tokens
  std::optional<int32_t> max_batched_tokens;    // nullopt = kDefaultMaxBatchedTokens, raised to max_num_seqs
  int32_t max_prefill_tokens_with_decodes = kAutoPrefillCap;
  double tpot_slo_ms = 0.0;  // the automatic prefill budget's targets (engine/prefill_budget.h); 0 = none
  double ttft_slo_ms = 0.0;
  bool chunked_prefill = true;
  bool prefix_cache = true;
  // A hybrid model's prefix cache: recurrent-state snapshots kept at block boundaries (nullopt: automatic, see
  // kDefaultStateSnapshots; 0: that model's prefix cache off). Nothing for other models (EnginePlan says so).
  std::optional<int32_t> state_snapshots;
  int32_t max_queue = kDefaultMaxQueue;
  int32_t ranks_sharing_ram = 1;  // processes of one split run on this machine share the free RAM's share
};

struct EnginePlan {
  EngineConfig config;
  KvPoolPlan kv_pool;
  // A hybrid model's recurrent state (model/model_config.h): bytes per sequence, and the slots the engine holds
  // (config.kv.num_state_slots); 0 for any other model.
  int64_t state_bytes_per_seq = 0;
  // EngineSettings::state_snapshots was given for a model without recurrent state: it does nothing there, and
  // start-up says so.
  bool state_snapshots_unused = false;
};

// The recurrent-state slots an engine of `max_num_seqs` sequences needs for `model`: one per sequence of a step
// plus one, for a fork parent whose samples take theirs before it lets its own go; 0 without recurrent layers.
int32_t state_slots_needed(const ModelConfig& model, int32_t max_num_seqs);

int32_t resolve_num_threads(int32_t configured, const ModelConfig& model);

// Errors name the setting ("max_num_seqs must be at least 1, got 0"); front ends check their own spelling of it
// first. `available_ram_bytes`: what the automatic pool takes its share of (core/system_memory.h).
Result<EnginePlan> plan_engine(const EngineSettings& settings, const ModelConfig& model, int64_t available_ram_bytes);

// The engine for one sequence at a time (run, bench latency): a KV pool of exactly one sequence of max_seq_len in
// blocks of block_size, no prefix cache, `prompt_tokens_per_step` prompt tokens a step.
EngineConfig single_sequence_engine_config(int32_t max_seq_len, int32_t block_size, KvCacheTypes kv_types,
                                           int32_t prompt_tokens_per_step, int32_t num_threads);
// The same, refused when its KV cache would take more than half of `ram_bytes` (a 128K-context model asked for a
// long run must not swap the machine to death): "the KV cache for N tokens needs X GiB, more than half of ...".
Result<EngineConfig> plan_single_sequence_engine(int32_t max_seq_len, int32_t block_size, KvCacheTypes kv_types,
                                                 int32_t prompt_tokens_per_step, int32_t num_threads,
                                                 const KvShape& kv_shape, int64_t ram_bytes);

}  // namespace pagoda
