// The sweep of pagoda tune.
#include "bench/tune_sweep.h"

#include <fmt/format.h>

#include <memory>

#include "loader/loaded_model.h"
#include "kernels/kernels.h"

namespace pagoda::bench {
namespace {

AblationSettings all_on(const TuneCandidate& c) {
  AblationSettings s = ablation_plan().back().settings;
  s.weights = c.weights;
  s.kv_dtype = c.kv_dtype;
  return s;
}

AblationEngineBase engine_base(const TuneCandidate& c, const TuneSweepOptions& o) {
  AblationEngineBase base;
  base.max_seq_len = o.max_seq_len;
  base.block_size = c.block_size;
  base.kv_budget_f32_tokens = o.kv_budget_f32_tokens;
  base.max_batched_tokens = c.max_batched_tokens;
  base.max_num_seqs = c.batch_size;
  base.num_threads = o.num_threads;
  return base;
}

bool same(const TuneCandidate& a, const TuneCandidate& b) {
  return a.weights == b.weights && a.kv_dtype == b.kv_dtype && a.block_size == b.block_size &&
         a.max_batched_tokens == b.max_batched_tokens && a.batch_size == b.batch_size;
}

}  // namespace

Result<TuneSweep> run_tune_sweep(const AblationModelFiles& files, const TuneSweepOptions& o,
                                 const std::function<void(const TuneTrial&)>& on_trial) {
  TuneSweep sweep;
  // Loaded once per weight type: the model switches are the same for every trial.
  std::unique_ptr<LoadedModel> loaded;
  AblationWeights loaded_weights = AblationWeights::kF32;
  auto run_trial = [&](const std::string& stage, const TuneCandidate& c) -> Result<size_t> {
    for (size_t i = 0; i < sweep.trials.size(); ++i)
      if (same(sweep.trials[i].candidate, c)) return i;
    if (!loaded || loaded_weights != c.weights) {
      loaded.reset();
      PAGODA_ASSIGN_OR_RETURN(LoadedModel m, load_model(files.path(c.weights), kernels::best_kernels(), {}));
      loaded = std::make_unique<LoadedModel>(std::move(m));
      loaded_weights = c.weights;
    }
    const ModelConfig& mc = loaded->model->config();
    const AblationSettings settings = all_on(c);
    const AblationEngineBase base = engine_base(c, o);
    PAGODA_ASSIGN_OR_RETURN(const EngineConfig config, ablation_engine_config(settings, base, mc));
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(*loaded->model, *loaded->tokenizer, config));
    Result<AblationMeasurement> m = run_ablation_workload(*engine, *loaded->tokenizer, o.workload, settings.batching);
    if (!m.ok()) return make_error(fmt::format("trial {}: {}", describe_candidate(c), m.error()));
    TuneTrial t;
    t.stage = stage;
    t.candidate = c;
    t.figures = m->figures;
    t.figures.max_concurrent_seqs = ablation_max_concurrent_seqs(settings, base, mc, o.workload);
    t.peak_running = m->peak_running;
    sweep.trials.push_back(t);
    if (on_trial) on_trial(t);
    return sweep.trials.size() - 1;
  };
  // One stage: the current candidate and each value of one knob; the best becomes current.
  TuneCandidate current = o.start;
  auto stage = [&](const std::string& name, auto values, auto set) -> Status {
    std::vector<TuneTrial> tried;
    for (const auto& v : values) {
      TuneCandidate c = current;
      set(c, v);
      PAGODA_ASSIGN_OR_RETURN(size_t i, run_trial(name, c));
      tried.push_back(sweep.trials[i]);
    }
    if (!tried.empty()) current = tried[choose_trial(tried, o.workload.scenario, o.slo).index].candidate;
    return Status();
  };
  PAGODA_RETURN_IF_ERROR(stage("quantization", o.weights, [](TuneCandidate& c, AblationWeights v) { c.weights = v; }));
  PAGODA_RETURN_IF_ERROR(stage("kv dtype", o.kv_dtypes, [](TuneCandidate& c, KvDType v) { c.kv_dtype = v; }));
  PAGODA_RETURN_IF_ERROR(stage("block size", o.block_sizes, [](TuneCandidate& c, int32_t v) { c.block_size = v; }));
  PAGODA_RETURN_IF_ERROR(
      stage("max batched tokens", o.max_batched_tokens, [](TuneCandidate& c, int32_t v) { c.max_batched_tokens = v; }));
  PAGODA_RETURN_IF_ERROR(stage("batch size", o.batch_sizes, [](TuneCandidate& c, int32_t v) { c.batch_size = v; }));
  sweep.choice = choose_trial(sweep.trials, o.workload.scenario, o.slo);
  const TuneCandidate& best = sweep.trials[sweep.choice.index].candidate;
  if (loaded) {
    PAGODA_ASSIGN_OR_RETURN(const EngineConfig config,
                            ablation_engine_config(all_on(best), engine_base(best, o), loaded->model->config()));
    sweep.kv_blocks = config.kv.num_blocks;
  }
  return sweep;
}

}  // namespace pagoda::bench
