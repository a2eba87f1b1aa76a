// Engine flags, checked under their own names, and their resolution into an EngineConfig through plan_engine.
#include "cli/engine_options.h"

#include <fmt/format.h>

#include <charconv>
#include <algorithm>
#include <cstdio>

#include "cli/common_options.h"
#include "core/block_size.h"
#include "core/system_memory.h"
#include "engine/prefill_budget.h"

namespace pagoda::cli {

void add_engine_options(CLI::App& app, EngineCliOptions& o, bool decodes) {
  app.add_option("--batch-size", o.batch_size, "sequences per step at most (default: the config's, or auto)");
  app.add_option(
      "--max-batched-tokens", o.max_batched_tokens,
      fmt::format("tokens per step, decode and prefill chunks together (default {})", kDefaultMaxBatchedTokens));
  app.add_option("--max-queue", o.max_queue, "waiting requests beyond which new ones are refused (default 4096)");
  app.add_option("--kv-blocks", o.kv_blocks, "KV blocks in the pool (default: kv_cache.max_entries, or auto)");
  app.add_option("--kv-memory", o.kv_memory_gib, "KV pool size in GiB (instead of --kv-blocks)");
  app.add_option("--block-size", o.block_size, "tokens per KV block (default: kv_cache.block_size)");
  app.add_flag("--no-prefix-cache", o.no_prefix_cache, "do not reuse the KV of shared prompt prefixes");
  app.add_option("--state-snapshots", o.state_snapshots,
                 fmt::format("hybrid models (recurrent layers): recurrent states kept at block boundaries for the "
                             "prefix cache, LRU (default {}, fewer if they would take over a quarter of the KV pool; "
                             "0 = no prefix cache for such a model)",
                             kDefaultStateSnapshots));
  app.add_flag("--no-chunked-prefill", o.no_chunked_prefill, "compute each prompt in one step");
  o.decodes = decodes;
  if (!decodes) return;
  app.add_option("--max-prefill-with-decodes", o.max_prefill_with_decodes,
                 fmt::format("while streams decode, prompt tokens per step at most: auto (default) = as many as "
                             "there are decoding streams, at least {}, so they slow at most about 2x while a prompt "
                             "arrives; N; or 0 = up to the step budget",
                             kMinPrefillTokensWithDecodes));
  app.add_option("--tpot-slo", o.tpot_slo_ms,
                 fmt::format("with --max-prefill-with-decodes auto: ms a step taking prompt tokens may last while "
                             "streams decode (default: {}x a decode-only step, from the step times measured)",
                             kDefaultStepSlowdown));
  app.add_option("--ttft-slo", o.ttft_slo_ms,
                 "with --max-prefill-with-decodes auto: ms to a request's first token; a prompt that would miss it "
                 "at the TPOT target's pace, but can still meet it, gets the prompt tokens it needs");
  add_spec_options(app, o.spec);
}

Result<ResolvedEngine> resolve_engine_config(const PagodaConfig& config, const EngineCliOptions& o,
                                             const ModelConfig& model, int32_t ranks_sharing_ram,
                                             const SpecResources& spec_resources) {
  EngineSettings s;
  s.max_seq_len = config.max_seq_len;
  s.num_threads = config.threads;
  s.chunked_prefill = !o.no_chunked_prefill;
  s.prefix_cache = !o.no_prefix_cache;
  if (o.state_snapshots && *o.state_snapshots < 0)
    return make_error("invalid option: --state-snapshots must be at least 0");
  s.state_snapshots = o.state_snapshots;
  if (o.max_prefill_with_decodes != "auto") {
    int32_t cap = -1;
    const std::string& v = o.max_prefill_with_decodes;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), cap);
    if (ec != std::errc() || end != v.data() + v.size() || cap < 0)
      return make_error("invalid option: --max-prefill-with-decodes must be auto, 0 (off) or a positive count, got '" +
                        v + "'");
    s.max_prefill_tokens_with_decodes = cap;
  }
  for (const auto& [flag, v] : {std::pair{"--tpot-slo", o.tpot_slo_ms}, std::pair{"--ttft-slo", o.ttft_slo_ms}})
    if (v && (!(*v > 0.0) || *v > 1e7))
      return make_error(fmt::format("invalid option: {} must be a positive number of milliseconds, got {}", flag, *v));
  // The flags over the file's slo.
  s.tpot_slo_ms = o.tpot_slo_ms.value_or(config.slo.tpot_ms);
  s.ttft_slo_ms = o.ttft_slo_ms.value_or(config.slo.ttft_ms);
  for (const auto& [name, v] :
       {std::pair{"--tpot-slo (slo.tpot_ms)", s.tpot_slo_ms}, std::pair{"--ttft-slo (slo.ttft_ms)", s.ttft_slo_ms}})
    if (v > 0.0 && o.max_prefill_with_decodes != "auto")
      return make_error(
          fmt::format("invalid option: {} paces the automatic prefill budget; it does nothing with "
                      "--max-prefill-with-decodes {}",
                      name, o.max_prefill_with_decodes));
  if (o.max_batched_tokens && *o.max_batched_tokens < 1)
    return make_error("invalid option: --max-batched-tokens must be at least 1");
  s.max_batched_tokens = o.max_batched_tokens;
  if (o.max_queue && *o.max_queue < 1) return make_error("invalid option: --max-queue must be at least 1");
  s.max_queue = o.max_queue.value_or(kDefaultMaxQueue);
  s.block_size = o.block_size.value_or(config.kv_cache.block_size);
  if (!is_valid_block_size(s.block_size))
    return make_error("invalid option: " + block_size_error("--block-size", s.block_size));
  s.max_num_seqs = o.batch_size ? o.batch_size : config.batch_size;
  if (s.max_num_seqs && *s.max_num_seqs < 1) return make_error("invalid option: --batch-size must be at least 1");
  if (o.kv_blocks && *o.kv_blocks < 1) return make_error("invalid option: --kv-blocks must be at least 1");
  if (o.kv_blocks && o.kv_memory_gib) return make_error("invalid option: give --kv-blocks or --kv-memory, not both");
  // --kv-memory overrides the file's kv_cache.max_entries as --kv-blocks does.
  s.kv_blocks = o.kv_blocks.value_or(o.kv_memory_gib ? 0 : config.kv_cache.max_entries);
  s.kv_memory_gib = o.kv_memory_gib;
  PAGODA_ASSIGN_OR_RETURN(s.kv_types, resolve_kv_types(config));
  s.ranks_sharing_ram = ranks_sharing_ram;
  // Unreadable MemAvailable: assume 4 GiB.
  PAGODA_ASSIGN_OR_RETURN(ResolvedEngine r, plan_engine(s, model, available_ram_bytes().value_or(int64_t(4) << 30)));
  if (Status spec = apply_spec_options(o.spec, r.config, spec_resources); !spec.ok()) return spec;
  r.config.decodes = o.decodes;
  return r;
}

void print_engine_summary(const ResolvedEngine& r, std::FILE* out) {
  const EngineConfig& c = r.config;
  const int32_t cap = c.scheduler.max_prefill_tokens_with_decodes;
  std::string prefill_cap = "budget";
  if (cap == kAutoPrefillCap) {
    prefill_cap = c.scheduler.tpot_slo_ms > 0.0
                      ? fmt::format("auto: steps of at most {} ms (--tpot-slo)", c.scheduler.tpot_slo_ms)
                      : fmt::format("auto: steps of at most {}x a decode-only one", kDefaultStepSlowdown);
    if (c.scheduler.ttft_slo_ms > 0.0)
      prefill_cap += fmt::format(", more for a prompt about to miss {} ms to its first token", c.scheduler.ttft_slo_ms);
  } else if (cap > 0) {
    prefill_cap = std::to_string(cap);
  }
  std::fprintf(out, "pagoda: KV cache: %s, %s, %lld bytes per token\n", describe_kv_pool(r.kv_pool).c_str(),
               kv_stored_types_name(c.kv_types, r.kv_pool.v_in_k).c_str(),
               static_cast<long long>(r.kv_pool.bytes_per_block / std::max(1, r.kv_pool.block_size)));
  std::fprintf(out,
               "pagoda: scheduler: max_seq_len %d, batch_size %d, max_batched_tokens %d, chunked prefill %s (%s "
               "prompt tokens per step while decoding), prefix cache %s, speculative decoding %s\n",
               c.max_seq_len, c.scheduler.max_num_seqs, c.scheduler.max_batched_tokens,
               c.scheduler.chunked_prefill ? "on" : "off", prefill_cap.c_str(), c.kv.enable_prefix_cache ? "on" : "off",
               describe_spec(c).c_str());
  if (r.state_bytes_per_seq > 0) {
    const std::string snapshots =
        c.kv.enable_prefix_cache
            ? fmt::format("prefix cache: {} state snapshots at block boundaries ({:.1f} MiB, --state-snapshots)",
                          c.kv.num_state_snapshots,
                          double(r.state_bytes_per_seq) * c.kv.num_state_snapshots / double(1 << 20))
            : std::string("prefix cache off");
    // Speculative decoding backs each sequence's state up before a verification (kv_cache_manager.h).
    const int32_t num_slots = c.kv.num_state_slots * (c.spec.method != SpecMethod::kNone ? 2 : 1);
    std::fprintf(out, "pagoda: recurrent state: %lld bytes per sequence, %d slots%s (%.1f MiB); %s\n",
                 static_cast<long long>(r.state_bytes_per_seq), num_slots,
                 c.spec.method != SpecMethod::kNone ? " (half of them backups for speculative decoding)" : "",
                 double(r.state_bytes_per_seq) * num_slots / double(1 << 20), snapshots.c_str());
  }
  if (r.state_snapshots_unused)
    std::fprintf(out, "pagoda: --state-snapshots ignored: this model has no recurrent layers\n");
}

}  // namespace pagoda::cli
