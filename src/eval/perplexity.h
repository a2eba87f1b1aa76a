// Perplexity of a model over a tokenized text, as llama-perplexity computes it so the figures compare: the
// text is cut into chunks of `ctx` tokens, each chunk starts afresh (its first token replaced by BOS) and only
// the second half of each chunk is scored, so every scored token sees at least ctx/2 tokens of context.
// With a base it also compares next-token distributions (mean KL(base || model), top-1 agreement, the paired
// log-ratio of the perplexities), as llama-perplexity's KL mode does: a base model run side by side, or the
// distributions llama-perplexity saved (`llama_logits_file.h`), which pins the text's tokens to llama.cpp's.
// Each chunk is one request through an Engine per model (prompt logits from ctx/2 on): the same step loop every
// other subcommand runs. Borrows the models.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "core/types.h"
#include "eval/llama_logits_file.h"
#include "kv/kv_cache_view.h"
#include "model/model.h"

namespace pagoda::eval {

struct PerplexityOptions {
  int32_t ctx = 512;                      // tokens per chunk (at most the model's context)
  int32_t max_chunks = 0;                 // 0: every full chunk of the text
  int32_t max_batch = 512;                // tokens per forward call
  KvCacheTypes kv_types;       // the evaluated model's KV cache
  KvCacheTypes base_kv_types;  // the base model's
};

// Next-token distributions of the model against the base's, over the same scored tokens.
struct KlSummary {
  double mean_kl = 0.0;  // nats
  double mean_kl_error = 0.0;
  double max_kl = 0.0;
  double top1_agreement = 0.0;  // fraction of scored tokens where both argmaxes agree
  double top1_agreement_error = 0.0;
  double base_ppl = 0.0;
  double base_ppl_error = 0.0;
  // mean(nll - base nll) over the scored tokens: ln(ppl / base ppl), with its standard error from the paired
  // differences (which tells a systematic gap from noise far better than the two perplexities' own errors).
  double ln_ppl_ratio = 0.0;
  double ln_ppl_ratio_error = 0.0;
  // The same mean's standard error from the chunks' own means: a chunk's tokens share its context, so a rounding
  // difference early in a chunk moves the later tokens' differences with it and the per-token error above reads too
  // small; the chunks start afresh and are independent.
  double ln_ppl_ratio_chunk_error = 0.0;
};

struct PerplexityReport {
  int32_t ctx = 0;
  int32_t num_chunks = 0;
  int64_t num_text_tokens = 0;
  int64_t num_scored = 0;
  double mean_nll = 0.0;            // nats per scored token
  double ppl = 0.0;                 // exp(mean_nll)
  double ppl_error = 0.0;           // one standard error, propagated: ppl * stderr(nll)
  std::vector<double> running_ppl;  // the estimate after each chunk
  std::optional<KlSummary> kl;
  double seconds = 0.0;
};

// `tokens`: the whole text, tokenized. `base`: for KL mode, a model with the same vocabulary (else nullptr).
// `on_chunk(done, total)` is called after each chunk. Errors: ctx < 4 or above a model's context, a text
// shorter than one chunk, vocabularies that differ, ids outside the vocabulary.
Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             int32_t num_threads, const PerplexityOptions& options,
                                             const Model* base = nullptr,
                                             const std::function<void(int32_t, int32_t)>& on_chunk = {});

// KL mode against llama-perplexity's saved distributions: the chunks are the file's (options.ctx must be its n_ctx),
// at most its n_chunk, and `tokens` must begin with the file's ids (else an error naming the
// first that differs, so a tokenization difference is never taken for an arithmetic one).
Result<PerplexityReport> evaluate_perplexity(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                             int32_t num_threads, const PerplexityOptions& options,
                                             LlamaLogitsFile& base_logits,
                                             const std::function<void(int32_t, int32_t)>& on_chunk = {});

}  // namespace pagoda::eval
