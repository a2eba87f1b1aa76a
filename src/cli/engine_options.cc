// Engine flags and their resolution into an EngineConfig.
#include "cli/engine_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>

#include "cli/common_options.h"
#include "core/system_memory.h"
#include "kv/kv_storage.h"

namespace pagoda::cli {

void add_engine_options(CLI::App& app, EngineCliOptions& o) {
  app.add_option("--batch-size", o.batch_size, "sequences per step at most (default: the config's, or auto)");
  app.add_option(
      "--max-batched-tokens", o.max_batched_tokens,
      fmt::format("tokens per step, decode and prefill chunks together (default {})", kDefaultMaxBatchedTokens));
  app.add_option("--max-queue", o.max_queue, "waiting requests beyond which new ones are refused (default 4096)");
  app.add_option("--kv-blocks", o.kv_blocks, "KV blocks in the pool (default: kv_cache.max_entries, or auto)");
  app.add_option("--kv-memory", o.kv_memory_gib, "KV pool size in GiB (instead of --kv-blocks)");
  app.add_option("--block-size", o.block_size, "tokens per KV block (default: kv_cache.page_size)");
  app.add_flag("--no-prefix-cache", o.no_prefix_cache, "do not reuse the KV of shared prompt prefixes");
  app.add_flag("--no-chunked-prefill", o.no_chunked_prefill, "compute each prompt in one step");
  app.add_option("--max-prefill-with-decodes", o.max_prefill_with_decodes,
                 fmt::format("while streams decode, prompt tokens per step at most: auto (default) = as many as "
                             "there are decoding streams, at least {}, so they slow at most about 2x while a prompt "
                             "arrives; N; or 0 = up to the step budget",
                             kMinPrefillTokensWithDecodes));
  add_spec_options(app, o.spec);
}

Result<ResolvedEngine> resolve_engine_config(const PagodaConfig& config, const EngineCliOptions& o,
                                             const ModelConfig& model, int32_t ranks_sharing_ram) {
  ResolvedEngine r;
  EngineConfig& c = r.config;
  c.max_seq_len = config.max_seq_len > 0 ? config.max_seq_len : model.context_length;
  c.num_threads = resolve_num_threads(config.threads, model);
  c.scheduler.chunked_prefill = !o.no_chunked_prefill;
  if (o.max_prefill_with_decodes == "auto") {
    c.scheduler.max_prefill_tokens_with_decodes = kAutoPrefillCap;
  } else {
    int32_t cap = -1;
    const std::string& v = o.max_prefill_with_decodes;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), cap);
    if (ec != std::errc() || end != v.data() + v.size() || cap < 0)
      return make_error("invalid option: --max-prefill-with-decodes must be auto, 0 (off) or a positive count, got '" +
                        v + "'");
    c.scheduler.max_prefill_tokens_with_decodes = cap;
  }
  c.scheduler.max_batched_tokens = o.max_batched_tokens.value_or(kDefaultMaxBatchedTokens);
  if (c.scheduler.max_batched_tokens < 1) return make_error("invalid option: --max-batched-tokens must be at least 1");
  if (Status spec = apply_spec_options(o.spec, c); !spec.ok()) return spec;
  c.max_queue = o.max_queue.value_or(4096);
  if (c.max_queue < 1) return make_error("invalid option: --max-queue must be at least 1");
  const int32_t block_size = o.block_size.value_or(config.kv_cache.page_size);
  if (block_size < 1 || block_size > 1024 || (block_size & (block_size - 1)) != 0)
    return make_error(
        fmt::format("invalid option: --block-size must be a power of two in [1, 1024], got {}", block_size));
  const std::optional<int32_t> batch_size = o.batch_size ? o.batch_size : config.batch_size;
  if (batch_size && *batch_size < 1) return make_error("invalid option: --batch-size must be at least 1");
  // Every running sequence needs a token of each step: a batch larger than the default budget raises it.
  if (batch_size && !o.max_batched_tokens)
    c.scheduler.max_batched_tokens = std::max(c.scheduler.max_batched_tokens, *batch_size);

  KvPoolRequest pool;
  pool.num_blocks = o.kv_blocks.value_or(config.kv_cache.max_entries);
  if (o.kv_blocks && *o.kv_blocks < 1) return make_error("invalid option: --kv-blocks must be at least 1");
  pool.memory_gib = o.kv_memory_gib;
  if (o.kv_blocks && o.kv_memory_gib) return make_error("invalid option: give --kv-blocks or --kv-memory, not both");
  pool.block_size = block_size;
  PAGODA_ASSIGN_OR_RETURN(c.kv_dtype, resolve_kv_dtype(config));
  pool.bytes_per_block = KvStorage::bytes_per_block_for(model.kv_shape(), block_size, c.kv_dtype);
  pool.max_seq_len = c.max_seq_len;
  pool.max_num_seqs = batch_size.value_or(256);
  pool.free_ram_share /= double(std::max(1, ranks_sharing_ram));
  PAGODA_ASSIGN_OR_RETURN(r.kv_pool, plan_kv_pool(pool, available_ram_bytes().value_or(int64_t(4) << 30)));  // unreadable: assume 4 GiB

  c.kv.num_blocks = r.kv_pool.num_blocks;
  c.kv.block_size = block_size;
  c.kv.enable_prefix_cache = !o.no_prefix_cache;
  // auto: every sequence needs a block and a token of the step.
  c.scheduler.max_num_seqs = batch_size.value_or(std::min(r.kv_pool.num_blocks, c.scheduler.max_batched_tokens));
  return r;
}

void print_engine_summary(const ResolvedEngine& r, std::FILE* out) {
  const EngineConfig& c = r.config;
  const int32_t cap = c.scheduler.max_prefill_tokens_with_decodes;
  const std::string prefill_cap = cap == kAutoPrefillCap
                                      ? fmt::format("auto: max(decoding, {})", kMinPrefillTokensWithDecodes)
                                  : cap > 0 ? std::to_string(cap)
                                            : std::string("budget");
  std::fprintf(out, "pagoda: KV cache: %s, %s\n", describe_kv_pool(r.kv_pool).c_str(), kv_dtype_name(c.kv_dtype));
  std::fprintf(out,
               "pagoda: scheduler: max_seq_len %d, batch_size %d, max_batched_tokens %d, chunked prefill %s (%s "
               "prompt tokens per step while decoding), prefix cache %s, speculative decoding %s\n",
               c.max_seq_len, c.scheduler.max_num_seqs, c.scheduler.max_batched_tokens,
               c.scheduler.chunked_prefill ? "on" : "off", prefill_cap.c_str(),
               c.kv.enable_prefix_cache ? "on" : "off", describe_spec(c).c_str());
}

}  // namespace pagoda::cli
