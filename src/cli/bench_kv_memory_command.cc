// `pagoda bench kv-memory [--shapes a,b] [--seq-len 576] [--json]`: the KV cache's bytes per token of named model
// shapes in each cache type, and how many sequences of --seq-len tokens a GiB of paged KV holds. Computed from the
// shapes with the KV storage's own accounting (kv/kv_storage.h, bench/kv_capacity.h), not measured: the
// results page's memory table. Shapes whose cache is not one K and V row per layer and token (sliding windows,
// shared-KV layers, recurrent layers, encoders) are refused by name: load such a model and read `bench latency`.
#include "cli/bench_kv_memory_command.h"

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/kv_capacity.h"
#include "cli/common_options.h"
#include "kv/kv_storage.h"
#include "synth/model_shapes.h"

namespace pagoda::cli {
namespace {

struct KvMemoryOptions {
  std::string shapes = "tinyllama-1.1b,llama3.2-1b,qwen3-0.6b,llama2-7b";
  int32_t seq_len = 576;
  bool json = false;
};

constexpr KvDType kTypes[] = {KvDType::kF32, KvDType::kF16, KvDType::kQ8_0, KvDType::kQ4_0, KvDType::kInt8};

// Why a shape's KV is not layers x K and V rows per token; empty when it is.
std::string irregular_kv(const synth::ModelShape& s) {
  if (s.sliding_window > 0 || s.hf_extra_json.find("sliding_window") != std::string::npos)
    return "sliding-window layers keep only their window";
  if (s.kv_shared_layers > 0) return "its last layers share earlier layers' K and V";
  if (s.delta_net_k_heads > 0 || s.hf_extra_json.find("layer_types") != std::string::npos)
    return "its recurrent layers keep a fixed state instead";
  if (s.gguf_architecture == "bert") return "an encoder keeps no KV cache";
  return "";
}

int bench_kv_memory(const KvMemoryOptions& o) {
  if (o.seq_len < 1 || o.seq_len > (1 << 24)) return report_error("--seq-len must be in [1, 16777216]");
  std::vector<synth::ModelShape> shapes;
  std::stringstream in(o.shapes);
  std::string name;
  while (std::getline(in, name, ',')) {
    std::optional<synth::ModelShape> shape = synth::find_model_shape(name);
    if (!shape)
      return report_error(fmt::format("--shapes: no shape named '{}' (pagoda gen-model --help lists them)", name));
    if (const std::string why = irregular_kv(*shape); !why.empty())
      return report_error(fmt::format("--shapes: {}'s KV is not one row per layer and token ({})", name, why));
    shapes.push_back(std::move(*shape));
  }
  if (shapes.empty()) return report_error("--shapes names no shape");
  constexpr int64_t kGiB = int64_t(1) << 30;
  constexpr int32_t kBlockSize = 16;
  nlohmann::json out = {
      {"bench", "kv-memory"}, {"seq_len", o.seq_len}, {"budget_bytes", kGiB}, {"shapes", nlohmann::json::array()}};
  if (!o.json) {
    std::printf(
        "KV cache bytes per token (computed from the shapes), and sequences of %d tokens 1 GiB of paged KV holds\n",
        o.seq_len);
    std::printf("%-16s %-22s", "shape", "layers x KV heads x dim");
    for (KvDType t : kTypes) std::printf(" %18s", kv_dtype_name(t));
    std::printf("\n");
  }
  for (const synth::ModelShape& s : shapes) {
    nlohmann::json types = nlohmann::json::object();
    const std::string layout = fmt::format("{} x {} x {}", s.num_layers, s.num_kv_heads, s.head_size());
    if (!o.json) std::printf("%-16s %-22s", s.name.c_str(), layout.c_str());
    const KvShape kv{s.num_layers, s.num_kv_heads * s.head_size(), s.num_kv_heads};
    for (KvDType t : kTypes) {
      const bool fits = KvStorage::kv_types_fit(kv, t).empty();
      const int64_t per_token = fits ? KvStorage::bytes_per_token(kv, t) : 0;
      bench::KvCapacityQuery q;
      q.budget_bytes = kGiB;
      q.bytes_per_block = fits ? KvStorage::bytes_per_block_for(kv, kBlockSize, t) : 0;
      q.block_size = kBlockSize;
      q.seq_len = o.seq_len;
      const int32_t seqs = fits ? bench::max_concurrent_seqs(q) : 0;
      types[kv_dtype_name(t)] = {{"fits", fits}, {"bytes_per_token", per_token}, {"max_seqs", seqs}};
      if (!o.json) {
        const std::string cell = fits ? fmt::format("{:.1f} KiB, {}", per_token / 1024.0, seqs) : "heads too narrow";
        std::printf(" %18s", cell.c_str());
      }
    }
    if (!o.json) std::printf("\n");
    out["shapes"].push_back({{"shape", s.name},
                             {"layers", s.num_layers},
                             {"kv_heads", s.num_kv_heads},
                             {"head_dim", s.head_size()},
                             {"types", std::move(types)}});
  }
  if (o.json) std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

void add_bench_kv_memory_command(CLI::App& bench, int& exit_code) {
  auto o = std::make_shared<KvMemoryOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "kv-memory", "KV cache bytes per token of model shapes per cache type, and sequences a GiB holds (computed)");
  cmd->add_option("--shapes", o->shapes, "comma-separated gen-model shapes")->capture_default_str();
  cmd->add_option("--seq-len", o->seq_len, "tokens per sequence for the sequences-per-GiB column")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "one JSON object instead of text");
  cmd->callback([o, &exit_code] { exit_code = bench_kv_memory(*o); });
}

}  // namespace pagoda::cli
