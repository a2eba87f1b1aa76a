// run_structured_tpot: one batch per case, alternately free and constrained, through fresh engines.
#include "bench/structured_tpot.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

#include "engine/engine.h"
#include "grammar/grammar_compiler.h"
#include "grammar/token_vocabulary.h"

namespace pagoda::bench {
namespace {

constexpr const char* kPrompt = "Answer with the data only.";

struct BatchRun {
  std::vector<int32_t> num_tokens;  // per request
  double mean_tpot_ms = 0;
  int32_t num_complete = 0;
};

Result<BatchRun> run_batch(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                           const std::vector<GenerateRequest>& requests) {
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model, tokenizer, config));
  std::vector<RequestHandle> handles;
  for (const GenerateRequest& r : requests) {
    PAGODA_ASSIGN_OR_RETURN(RequestHandle h, engine->submit(r));
    handles.push_back(std::move(h));
  }
  BatchRun run;
  double sum = 0;
  int32_t counted = 0;
  for (RequestHandle& h : handles) {
    const RequestOutput out = h.stream->wait_all();
    if (out.finish_reason == FinishReason::kAbort) return make_error("a request was aborted (its grammar allowed no token)");
    run.num_tokens.push_back(out.num_output_tokens);
    if (out.finish_reason == FinishReason::kStop) ++run.num_complete;
    if (out.timing && out.timing->token_us.size() >= 2) {
      sum += out.timing->tpot_s() * 1e3;
      ++counted;
    }
  }
  run.mean_tpot_ms = counted > 0 ? sum / counted : 0.0;
  return run;
}

}  // namespace

Result<std::vector<StructuredTpotRow>> run_structured_tpot(const Model& model, const Tokenizer& tokenizer,
                                                           const EngineConfig& config,
                                                           const std::vector<StructuredCase>& cases,
                                                           const StructuredTpotOptions& o) {
  if (o.num_requests < 1 || o.max_tokens < 2 || o.num_rounds < 1)
    return make_error("bench structured: requests, rounds >= 1 and max tokens >= 2");
  grammar::GrammarCompiler compiler(grammar::TokenVocabulary::from_tokenizer(tokenizer), 0);
  std::vector<StructuredTpotRow> rows;
  for (const StructuredCase& c : cases) {
    Result<std::shared_ptr<const grammar::CompiledGrammar>> g = compiler.compile(c.spec);
    if (!g.ok()) return make_error(fmt::format("bench structured: case '{}': {}", c.name, g.error()));
    std::vector<GenerateRequest> constrained;
    for (int32_t i = 0; i < o.num_requests; ++i) {
      GenerateRequest r;
      r.prompt = tokenizer.encode(kPrompt, tokenizer.bos_id() >= 0);
      r.sampling.temperature = o.temperature;
      r.sampling.seed = uint64_t(i + 1);
      r.sampling.max_tokens = o.max_tokens;
      r.grammar = *g;
      constrained.push_back(std::move(r));
    }
    // Warm the grammar's per-state masks (what the compile cache gives later requests), untimed.
    PAGODA_ASSIGN_OR_RETURN(const BatchRun warm, run_batch(model, tokenizer, config, constrained));
    std::vector<GenerateRequest> free = constrained;
    for (size_t i = 0; i < free.size(); ++i) {
      free[i].grammar = nullptr;
      free[i].sampling.ignore_eos = true;
      free[i].sampling.max_tokens = std::max(1, warm.num_tokens[i]);
    }
    StructuredTpotRow row;
    row.name = c.name;
    for (int32_t n : warm.num_tokens) row.num_tokens += n;
    row.num_complete = warm.num_complete;
    row.free_tpot_ms = row.constrained_tpot_ms = std::numeric_limits<double>::infinity();
    for (int32_t round = 0; round < o.num_rounds; ++round) {
      PAGODA_ASSIGN_OR_RETURN(const BatchRun f, run_batch(model, tokenizer, config, free));
      PAGODA_ASSIGN_OR_RETURN(const BatchRun k, run_batch(model, tokenizer, config, constrained));
      if (k.num_tokens != warm.num_tokens)
        return make_error(fmt::format("bench structured: case '{}': seeded requests gave other lengths", c.name));
      row.free_tpot_ms = std::min(row.free_tpot_ms, f.mean_tpot_ms);
      row.constrained_tpot_ms = std::min(row.constrained_tpot_ms, k.mean_tpot_ms);
    }
    rows.push_back(row);
  }
  return rows;
}

std::string structured_tpot_text(const std::vector<StructuredTpotRow>& rows) {
  std::string out = fmt::format("{:<28} {:>7} {:>9} {:>12} {:>15} {:>9}\n", "case", "tokens", "complete",
                                "TPOT free", "TPOT grammar", "overhead");
  double free_sum = 0, constrained_sum = 0;
  for (const StructuredTpotRow& r : rows) {
    out += fmt::format("{:<28} {:>7} {:>9} {:>9.3f} ms {:>12.3f} ms {:>8.1f}%\n", r.name, r.num_tokens,
                       r.num_complete, r.free_tpot_ms, r.constrained_tpot_ms, 100.0 * r.overhead());
    free_sum += r.free_tpot_ms;
    constrained_sum += r.constrained_tpot_ms;
  }
  if (!rows.empty() && free_sum > 0)
    out += fmt::format("{:<28} {:>7} {:>9} {:>9.3f} ms {:>12.3f} ms {:>8.1f}%\n", "mean", "", "",
                       free_sum / double(rows.size()), constrained_sum / double(rows.size()),
                       100.0 * (constrained_sum / free_sum - 1.0));
  return out;
}

}  // namespace pagoda::bench
