// What a grammar costs a generation: TPOT of the same batch of requests with and without each structured case's
// constraint, through the Engine on a real model. The constrained requests run first (their grammars compiled once
// and warmed by an untimed run, as the server's compile cache serves later requests); the free ones then ask for
// exactly as many tokens as each constrained one produced (EOS ignored), so both batches hold the same sequences
// for the same steps. Rounds alternate free and constrained; each side keeps its best round (noise only slows).
#pragma once

#include <pagoda/status.h>

#include <string>
#include <vector>

#include "bench/structured_bench.h"
#include "engine/engine_config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::bench {

struct StructuredTpotOptions {
  int32_t num_requests = 4;  // in one batch
  int32_t max_tokens = 96;
  int32_t num_rounds = 3;
  float temperature = 0.7f;  // with per-request seeds, so a batch's outputs differ
};

struct StructuredTpotRow {
  std::string name;
  int64_t num_tokens = 0;    // output tokens of the batch (the same with and without the constraint)
  double free_tpot_ms = 0;   // mean over the batch's requests, best round
  double constrained_tpot_ms = 0;
  int32_t num_complete = 0;  // constrained requests that completed their grammar (the rest reached max_tokens)
  double overhead() const { return free_tpot_ms > 0 ? constrained_tpot_ms / free_tpot_ms - 1.0 : 0.0; }
};

// `config`: the engine each run gets (fresh per run). Errors: a case that does not compile, an engine refusal.
Result<std::vector<StructuredTpotRow>> run_structured_tpot(const Model& model, const Tokenizer& tokenizer,
                                                           const EngineConfig& config,
                                                           const std::vector<StructuredCase>& cases,
                                                           const StructuredTpotOptions& options);

std::string structured_tpot_text(const std::vector<StructuredTpotRow>& rows);

}  // namespace pagoda::bench
