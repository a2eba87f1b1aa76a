// measure_tune_estimates and write_tuned_config: tune's measurements of the machine and its config file.
#include "bench/tune_outputs.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "bench/kv_bytes_per_token.h"
#include "bench/latency_bench.h"
#include "bench/matmul_throughput.h"
#include "bench/memory_bandwidth.h"
#include "core/thread_pool.h"
#include "format/gguf_reader.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"

namespace pagoda::bench {

Result<MeasuredEstimates> measure_tune_estimates(const AblationModelFiles& files, int32_t num_threads,
                                                 int64_t membw_array_mib) {
  MeasuredEstimates m;
  TuneEstimates& e = m.estimates;
  {
    ThreadPool pool(num_threads);
    m.num_threads = pool.num_threads();
    const MemoryBandwidth bw = measure_memory_bandwidth(pool, membw_array_mib, 3);
    e.membw_gbps = bw.read_gbps;
    e.matmul_gflops = measure_matmul_gflops(pool, kernels::best_kernels());
  }
  const ModelConfig& mc = files.model_config();
  e.kv_bytes_per_token_f16 = kv_bytes_per_token(mc.num_layers, mc.num_kv_heads, mc.head_dim, 2);
  e.kv_bytes_per_token_f32 = KvStorage::bytes_per_token(mc.kv_shape(), KvDType::kF32);
  e.kv_bytes_per_token_int8 = KvStorage::bytes_per_token(mc.kv_shape(), KvDType::kInt8);
  for (AblationWeights wt : {AblationWeights::kF32, AblationWeights::kQ8_0, AblationWeights::kQ4_0}) {
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile f, format::GgufFile::open(files.path(wt)));
    e.weight_bytes[size_t(wt)] = int64_t(weight_bytes_per_token(f, mc.vocab_size, mc.num_experts, mc.num_experts_used));
  }
  return m;
}

Result<std::string> write_tuned_config(const TuneCandidate& best, const AblationModelFiles& files,
                                       const std::string& model_path, const std::string& config_path,
                                       int32_t max_seq_len, int32_t kv_blocks, const TuneSlo& slo) {
  std::string written_model = model_path;
  if (best.weights != AblationWeights::kF32) {
    const std::filesystem::path out(config_path);
    const std::filesystem::path kept =
        out.parent_path() / fmt::format("{}-{}.gguf", out.stem().string(), ablation_weights_name(best.weights));
    std::error_code ec;
    std::filesystem::copy_file(files.path(best.weights), kept, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) return make_error(fmt::format("cannot write {}: {}", kept.string(), ec.message()));
    written_model = kept.string();
  }
  const PagodaConfig tuned = tuned_config(best, written_model, max_seq_len, kv_blocks, slo);
  if (Status s = validate_config(tuned); !s.ok()) return make_error("the tuned config is invalid: " + s.message());
  std::ofstream out(config_path, std::ios::binary | std::ios::trunc);
  out << config_to_json(tuned) << "\n";
  if (!out) return make_error(fmt::format("cannot write {}", config_path));
  return written_model;
}

}  // namespace pagoda::bench
