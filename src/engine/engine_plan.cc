// plan_engine and the one-sequence configurations: the sizing policy every front end shares.
#include "engine/engine_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/block_size.h"
#include "kv/kv_storage.h"

namespace pagoda {

int32_t resolve_num_threads(int32_t configured, const ModelConfig& m) {
  if (configured > 0) return configured;
  const int64_t per_layer =
      2 * int64_t(m.dim) * m.dim + 2 * int64_t(m.dim) * m.kv_dim() + 3 * int64_t(m.dim) * m.hidden_dim;
  const int64_t params = int64_t(m.num_layers) * per_layer + 2 * int64_t(m.vocab_size) * m.dim;
  return params < kMinParamsPerExtraThread ? 1 : 0;
}

namespace {

Status invalid(std::string message) { return make_error(std::move(message), StatusCode::kInvalidArgument); }

}  // namespace

Result<EnginePlan> plan_engine(const EngineSettings& s, const ModelConfig& model, int64_t available_ram_bytes) {
  if (s.max_seq_len < 0)
    return invalid(fmt::format("max_seq_len must be >= 0 (0 = the model's), got {}", s.max_seq_len));
  if (s.num_threads < 0) return invalid(fmt::format("num_threads must be >= 0 (0 = automatic), got {}", s.num_threads));
  if (!is_valid_block_size(s.block_size)) return invalid(block_size_error("block_size", s.block_size));
  if (s.kv_blocks < 0) return invalid(fmt::format("kv_blocks must be >= 0 (0 = automatic), got {}", s.kv_blocks));
  if (s.kv_blocks > 0 && s.kv_memory_gib) return invalid("give a KV block count or a KV memory budget, not both");
  if (s.max_num_seqs && *s.max_num_seqs < 1)
    return invalid(fmt::format("max_num_seqs must be at least 1, got {}", *s.max_num_seqs));
  if (s.max_batched_tokens && *s.max_batched_tokens < 1)
    return invalid(fmt::format("max_batched_tokens must be at least 1, got {}", *s.max_batched_tokens));
  if (s.max_prefill_tokens_with_decodes < 0 && s.max_prefill_tokens_with_decodes != kAutoPrefillCap)
    return invalid("max_prefill_tokens_with_decodes must be automatic, 0 (off) or a positive count");
  if (s.state_snapshots && *s.state_snapshots < 0)
    return invalid(fmt::format("state_snapshots must be >= 0 (0 = no prefix cache for a hybrid model), got {}",
                               *s.state_snapshots));
  if (s.max_queue < 1) return invalid(fmt::format("max_queue must be at least 1, got {}", s.max_queue));
  if (!(s.tpot_slo_ms >= 0.0) || !(s.ttft_slo_ms >= 0.0)) return invalid("latency targets must be >= 0 ms (0 = none)");

  if (const std::string unfit = KvStorage::kv_types_fit(model.kv_shape(), s.kv_types); !unfit.empty())
    return invalid(unfit);

  EnginePlan plan;
  EngineConfig& c = plan.config;
  c.max_seq_len = s.max_seq_len > 0 ? s.max_seq_len : model.context_length;
  c.num_threads = resolve_num_threads(s.num_threads, model);
  c.kv_types = s.kv_types;
  c.max_queue = s.max_queue;
  c.scheduler.chunked_prefill = s.chunked_prefill;
  c.scheduler.max_prefill_tokens_with_decodes = s.max_prefill_tokens_with_decodes;
  c.scheduler.tpot_slo_ms = s.tpot_slo_ms;
  c.scheduler.ttft_slo_ms = s.ttft_slo_ms;
  c.scheduler.max_batched_tokens = s.max_batched_tokens.value_or(kDefaultMaxBatchedTokens);
  // Every running sequence needs a token of each step: a batch larger than the default budget raises it.
  if (s.max_num_seqs && !s.max_batched_tokens)
    c.scheduler.max_batched_tokens = std::max(c.scheduler.max_batched_tokens, *s.max_num_seqs);
  // An encoder computes each input whole in one step: by default a step holds the longest input its context allows.
  if (model.encoder && !s.max_batched_tokens)
    c.scheduler.max_batched_tokens = std::max(c.scheduler.max_batched_tokens, c.max_seq_len);

  KvPoolRequest pool;
  pool.num_blocks = s.kv_blocks;
  pool.memory_gib = s.kv_memory_gib;
  pool.block_size = s.block_size;
  pool.bytes_per_block = KvStorage::bytes_per_block_for(model.kv_shape(), s.block_size, s.kv_types);
  pool.max_seq_len = c.max_seq_len;
  pool.max_num_seqs = s.max_num_seqs.value_or(256);
  pool.free_ram_share /= double(std::max(1, s.ranks_sharing_ram));
  PAGODA_ASSIGN_OR_RETURN(plan.kv_pool, plan_kv_pool(pool, available_ram_bytes));
  plan.kv_pool.v_in_k = model.kv_shape().v_in_k;

  c.kv.num_blocks = plan.kv_pool.num_blocks;
  c.kv.block_size = s.block_size;
  c.kv.enable_prefix_cache = s.prefix_cache;
  // Automatic: every sequence needs a block and a token of the step.
  c.scheduler.max_num_seqs = s.max_num_seqs.value_or(std::min(plan.kv_pool.num_blocks, c.scheduler.max_batched_tokens));
  c.kv.num_state_slots = state_slots_needed(model, c.scheduler.max_num_seqs);
  plan.state_bytes_per_seq = model.state_floats_per_seq() * int64_t(sizeof(float));
  if (!model.has_recurrent_state()) {
    plan.state_snapshots_unused = s.state_snapshots.has_value();
  } else if (s.prefix_cache) {
    // A hybrid model's prefix hits restore a snapshot of the state at their last block (kv_cache_manager.h).
    const int64_t fit = plan.kv_pool.total_bytes / 4 / std::max<int64_t>(1, plan.state_bytes_per_seq);
    c.kv.num_state_snapshots =
        s.state_snapshots.value_or(int32_t(std::clamp<int64_t>(fit, 1, kDefaultStateSnapshots)));
    c.kv.enable_prefix_cache = c.kv.num_state_snapshots > 0;
  }
  return plan;
}

int32_t state_slots_needed(const ModelConfig& model, int32_t max_num_seqs) {
  return model.has_recurrent_state() ? max_num_seqs + 1 : 0;
}

EngineConfig single_sequence_engine_config(int32_t max_seq_len, int32_t block_size, KvCacheTypes kv_types,
                                           int32_t prompt_tokens_per_step, int32_t num_threads) {
  EngineConfig c;
  c.max_seq_len = max_seq_len;
  c.kv_types = kv_types;
  c.kv.block_size = block_size;
  c.kv.num_blocks = (max_seq_len + block_size - 1) / block_size;
  c.kv.enable_prefix_cache = false;
  c.scheduler.max_num_seqs = 1;
  c.scheduler.max_batched_tokens = prompt_tokens_per_step;
  c.num_threads = num_threads;
  return c;
}

Result<EngineConfig> plan_single_sequence_engine(int32_t max_seq_len, int32_t block_size, KvCacheTypes kv_types,
                                                 int32_t prompt_tokens_per_step, int32_t num_threads,
                                                 const KvShape& kv_shape, int64_t ram_bytes) {
  if (!is_valid_block_size(block_size)) return invalid(block_size_error("block_size", block_size));
  EngineConfig c =
      single_sequence_engine_config(max_seq_len, block_size, kv_types, prompt_tokens_per_step, num_threads);
  if (const std::string unfit = KvStorage::kv_types_fit(kv_shape, kv_types); !unfit.empty())
    return make_error(unfit, StatusCode::kInvalidArgument);
  const int64_t kv_bytes = int64_t(c.kv.num_blocks) * KvStorage::bytes_per_block_for(kv_shape, block_size, kv_types);
  if (kv_bytes > ram_bytes / 2)
    return make_error(fmt::format("the KV cache for {} tokens needs {:.1f} GiB, more than half of this machine's "
                                  "{:.1f} GiB; lower max_seq_len or the tokens asked for",
                                  max_seq_len, double(kv_bytes) / double(1 << 30), double(ram_bytes) / double(1 << 30)),
                      StatusCode::kLimitExceeded);
  return c;
}

}  // namespace pagoda
