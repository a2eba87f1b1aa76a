// The public Generator (include/pagoda/generator.h) over the loader, the engine and the tokenizer: a facade that
// translates the API's plain options into EngineConfig and GenerateRequest, and RequestOutputs into steps. Holds
// no policy of its own beyond the defaults the header states.
#include <pagoda/generator.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/system_memory.h"
#include "engine/engine.h"
#include "engine/engine_plan.h"
#include "eval/awq_calibration.h"
#include "kernels/kernels.h"
#include "loader/loaded_model.h"
#include "loader/quantize_on_load.h"

namespace pagoda {
namespace {

Result<LoadedModel> load(const GeneratorOptions& o) {
  PAGODA_ASSIGN_OR_RETURN(std::optional<format::GgmlType> type, weight_quantization_type(o.quantization));
  if (!type) return load_model(o.model, kernels::best_kernels());
  return load_model_quantized(o.model, eval::builtin_load_quantization(*type, o.num_threads),
                              kernels::best_kernels());
}

GenerationStep step_of(RequestOutput&& out) {
  return GenerationStep{std::move(out.text), std::vector<int32_t>(out.new_tokens.begin(), out.new_tokens.end()),
                        out.finished, out.finish_reason};
}

}  // namespace

struct Generator::Impl {
  LoadedModel loaded;
  std::unique_ptr<Engine> engine;
  std::string description;
};

struct GenerationStream::State {
  Engine* engine = nullptr;
  RequestHandle handle;
  bool done = false;
};

GenerationStream::GenerationStream(std::unique_ptr<State> state) : state_(std::move(state)) {}
GenerationStream::GenerationStream(GenerationStream&&) noexcept = default;
GenerationStream& GenerationStream::operator=(GenerationStream&&) noexcept = default;
GenerationStream::~GenerationStream() = default;

std::optional<GenerationStep> GenerationStream::next() {
  if (state_ == nullptr || state_->done) return std::nullopt;
  for (;;) {
    std::optional<RequestOutput> out = state_->handle.stream->next(std::chrono::milliseconds(1000));
    if (!out) continue;
    state_->done = out->finished;
    return step_of(std::move(*out));
  }
}

GenerationResult GenerationStream::wait() {
  GenerationResult r;
  if (state_ == nullptr || state_->done) return r;
  RequestOutput all = state_->handle.stream->wait_all();
  state_->done = true;
  r.text = std::move(all.text);
  r.token_ids.assign(all.new_tokens.begin(), all.new_tokens.end());
  r.finish_reason = all.finish_reason;
  r.num_prompt_tokens = all.num_prompt_tokens;
  r.num_cached_prompt_tokens = all.num_cached_tokens;
  return r;
}

void GenerationStream::cancel() {
  if (state_ != nullptr && !state_->done) state_->engine->cancel(state_->handle.id);
}

int64_t GenerationStream::id() const { return state_ == nullptr ? -1 : state_->handle.id; }

Generator::Generator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::~Generator() = default;

Result<std::unique_ptr<Generator>> Generator::load(const GeneratorOptions& o) {
  if (o.num_threads < 0 || o.max_seq_len < 0 || o.max_batch_size < 0 || o.kv_cache_bytes < 0)
    return make_error("GeneratorOptions: counts and sizes must be >= 0 (0 = automatic)",
                      StatusCode::kInvalidArgument);
  auto impl = std::make_unique<Impl>();
  PAGODA_ASSIGN_OR_RETURN(impl->loaded, pagoda::load(o));
  const ModelConfig& mc = impl->loaded.model->config();

  EngineSettings s;
  s.max_seq_len = o.max_seq_len;
  s.num_threads = o.num_threads;
  const std::optional<KvDType> type_k = parse_kv_dtype(o.cache_type_k), type_v = parse_kv_dtype(o.cache_type_v);
  if (!type_k || !type_v)
    return make_error(fmt::format("GeneratorOptions: cache_type_k and cache_type_v must be one of {}, got '{}' and '{}'",
                                  kv_dtype_names(), o.cache_type_k, o.cache_type_v),
                      StatusCode::kInvalidArgument);
  if (o.int8_kv_cache && (*type_k != kDefaultKvDType || *type_v != kDefaultKvDType))
    return make_error("GeneratorOptions: int8_kv_cache sets both cache types to int8; leave cache_type_k and "
                      "cache_type_v at f16 or set them instead",
                      StatusCode::kInvalidArgument);
  s.kv_types = o.int8_kv_cache ? KvCacheTypes(KvDType::kInt8) : KvCacheTypes(*type_k, *type_v);
  if (o.max_batch_size > 0) s.max_num_seqs = o.max_batch_size;
  if (o.kv_cache_bytes > 0) s.kv_memory_gib = double(o.kv_cache_bytes) / double(int64_t(1) << 30);
  s.prefix_cache = o.prefix_caching;
  // Unreadable MemAvailable: assume 4 GiB.
  PAGODA_ASSIGN_OR_RETURN(const EnginePlan plan,
                          plan_engine(s, mc, available_ram_bytes().value_or(int64_t(4) << 30)));
  const EngineConfig& c = plan.config;
  PAGODA_ASSIGN_OR_RETURN(impl->engine, Engine::create(*impl->loaded.model, *impl->loaded.tokenizer, c));

  impl->description = fmt::format("model: {}\n", impl->loaded.source);
  if (!impl->loaded.weights_note.empty()) impl->description += fmt::format("weights: {}\n", impl->loaded.weights_note);
  impl->description += fmt::format("KV cache: {}, {}, {} bytes per token\nkernels: {}, {} threads\n",
                                   describe_kv_pool(plan.kv_pool),
                                   kv_stored_types_name(c.kv_types, plan.kv_pool.v_in_k),
                                   plan.kv_pool.bytes_per_block / plan.kv_pool.block_size,
                                   kernels::isa_name(kernels::best_kernels().isa), impl->engine->num_threads());
  return std::unique_ptr<Generator>(new Generator(std::move(impl)));
}

Result<GenerationStream> Generator::submit(std::string_view prompt, const GenerationOptions& o) {
  GenerateRequest r;
  r.prompt = impl_->loaded.tokenizer->encode(prompt, o.add_bos && impl_->loaded.tokenizer->bos_id() >= 0);
  SamplingParams& s = r.sampling;
  s.max_tokens = o.max_tokens;
  s.temperature = o.temperature;
  s.top_k = o.top_k;
  s.top_p = o.top_p;
  s.min_p = o.min_p;
  s.repetition_penalty = o.repetition_penalty;
  s.seed = o.seed;
  s.stop = o.stop;
  s.ignore_eos = o.ignore_eos;
  PAGODA_RETURN_IF_ERROR(s.validate());
  PAGODA_ASSIGN_OR_RETURN(RequestHandle handle, impl_->engine->submit(std::move(r)));
  auto state = std::make_unique<GenerationStream::State>();
  state->engine = impl_->engine.get();
  state->handle = std::move(handle);
  return GenerationStream(std::move(state));
}

Result<GenerationResult> Generator::generate(std::string_view prompt, const GenerationOptions& o) {
  PAGODA_ASSIGN_OR_RETURN(GenerationStream s, submit(prompt, o));
  return s.wait();
}

std::vector<int32_t> Generator::tokenize(std::string_view text, bool add_bos) const {
  const std::vector<TokenId> ids = impl_->loaded.tokenizer->encode(text, add_bos);
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string Generator::detokenize(const std::vector<int32_t>& token_ids) const {
  const std::vector<TokenId> ids(token_ids.begin(), token_ids.end());
  return impl_->loaded.tokenizer->decode(ids);
}

std::string Generator::description() const { return impl_->description; }

}  // namespace pagoda
