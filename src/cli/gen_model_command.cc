// `pagoda gen-model --shape NAME [--type f32|f16|q8_0|q4_0] [--format gguf|hf] [--tokenizer tokenizer.json]
//  -o OUT [--seed S] [--layers N] [--vocab N] [--splits N]`.
#include "cli/gen_model_command.h"

#include <fmt/format.h>

#include <algorithm>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/common_options.h"
#include "cli/progress.h"
#include "format/gguf_split.h"
#include "synth/hf_random_model_writer.h"
#include "synth/random_bert_writer.h"
#include "synth/random_deepseek2_writer.h"
#include "synth/random_gpt_oss_writer.h"
#include "synth/random_qwen35_writer.h"
#include "synth/random_model_writer.h"

namespace pagoda::cli {
namespace {

struct GenModelOptions {
  CommonOptions common;
  std::string shape;
  std::string type = "f32";
  std::string output;
  uint64_t seed = 1;
  std::optional<int32_t> num_layers;
  std::optional<int32_t> vocab_size;
  std::string format = "gguf";
  std::string tokenizer;
  int32_t splits = 1;
};

std::optional<format::GgmlType> parse_weight_type(const std::string& name) {
  if (name == "f32") return format::GgmlType::kF32;
  if (name == "f16") return format::GgmlType::kF16;
  if (name == "q8_0") return format::GgmlType::kQ8_0;
  if (name == "q4_0") return format::GgmlType::kQ4_0;
  return std::nullopt;
}

// Rewrites the GGUF at `path` as a split set beside it (PREFIX-00001-of-0000N.gguf, PREFIX = `path` less ".gguf")
// and removes the whole file.
Status split_written_model(const std::string& path, int32_t splits) {
  {
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile whole, format::GgufFile::open(path));
    const std::string prefix = path.substr(0, path.size() - std::string_view(".gguf").size());
    PAGODA_ASSIGN_OR_RETURN(std::vector<std::string> written, format::write_gguf_splits(whole, prefix, splits));
    std::fprintf(stderr, "pagoda: split into %s ... %s\n", written.front().c_str(), written.back().c_str());
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return Status();
}

int gen_model(const GenModelOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  std::optional<synth::ModelShape> shape = synth::find_model_shape(o.shape);
  if (!shape) {
    std::string names;
    for (const std::string& n : synth::model_shape_names()) names += (names.empty() ? "" : ", ") + n;
    return report_error(fmt::format("unknown shape '{}' (known: {})", o.shape, names));
  }
  std::optional<format::GgmlType> type = parse_weight_type(o.type);
  if (!type) return report_error(fmt::format("unknown --type '{}' (f32, f16, q8_0, q4_0)", o.type));
  if (o.num_layers) {
    if (*o.num_layers < 1 || *o.num_layers > shape->num_layers)
      return report_error(fmt::format("--layers must be in [1, {}] for {}", shape->num_layers, shape->name));
    // The first N layers: of Gemma 4's KV-sharing last layers, those that remain.
    shape->kv_shared_layers = std::max(0, shape->kv_shared_layers - (shape->num_layers - *o.num_layers));
    shape->num_layers = *o.num_layers;
    shape->leading_dense_layers = std::min(shape->leading_dense_layers, shape->num_layers);
  }
  if (o.vocab_size) {
    if (*o.vocab_size < 260 || *o.vocab_size > shape->vocab_size)
      return report_error(fmt::format("--vocab must be in [260, {}] for {}", shape->vocab_size, shape->name));
    shape->vocab_size = *o.vocab_size;
  }
  if (o.format != "gguf" && o.format != "hf") return report_error("--format must be gguf or hf");
  if (shape->decoder_reranker && o.format != "gguf")
    return report_error(fmt::format("{} is written as GGUF only (its reranker head and keys are llama.cpp's)",
                                    shape->name));
  if (!o.tokenizer.empty() && !std::filesystem::is_regular_file(o.tokenizer))
    return report_error(fmt::format("--tokenizer {}: no such file", o.tokenizer));
  if (o.splits < 1) return report_error("--splits must be at least 1");
  if (o.splits > 1 && (o.format != "gguf" || !o.output.ends_with(".gguf")))
    return report_error("--splits writes a GGUF set: it needs --format gguf and an output ending in .gguf");
  Progress progress("gen-model");
  // What follows a writer of an architecture's own GGUF or of an HF folder: the split, then the summary line.
  const auto finish_written = [&](const Status& st, const std::string& architecture) {
    progress.finish();
    if (!st.ok()) return report_error(st.message());
    if (o.splits > 1) {
      Status split = split_written_model(o.output, o.splits);
      if (!split.ok()) return report_error(split.message());
    }
    std::fprintf(stderr, "pagoda: wrote %s: %s (%s), %d layers, %.2fB parameters (%.2fB active), %s weights\n",
                 o.output.c_str(), shape->name.c_str(), architecture.c_str(), shape->num_layers,
                 double(shape->num_params()) / 1e9, double(shape->num_active_params()) / 1e9, o.type.c_str());
    return 0;
  };
  if (!shape->gguf_architecture.empty() && (o.format == "gguf" || shape->hf_architecture.empty())) {
    // gpt-oss, the encoders, qwen35, qwen3next and deepseek2: their GGUFs written straight (any --type); gpt-oss's HF folder
    // below.
    if (o.format != "gguf") return report_error(fmt::format("{} is written as GGUF only", shape->name));
    if (!o.tokenizer.empty())
      return report_error(fmt::format("--tokenizer needs an HF-family shape, not {}", shape->name));
    synth::RandomModelOptions options{
        *shape, *type, o.seed, o.output,
        [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); }};
    Status st = shape->is_encoder()                    ? synth::write_random_bert_model(options)
                : shape->gguf_architecture == "qwen35" || shape->gguf_architecture == "qwen3next"
                    ? synth::write_random_qwen35_model(options)
                : shape->gguf_architecture == "deepseek2" ? synth::write_random_deepseek2_model(options)
                                                          : synth::write_random_gpt_oss_model(options);
    return finish_written(st, shape->gguf_architecture);
  }
  // The HF families (and --format hf) go through an HF folder; the GGUF of one is that folder converted.
  if (o.format == "hf" || !shape->hf_architecture.empty()) {
    if (shape->hf_architecture.empty()) shape->hf_architecture = "LlamaForCausalLM";
    if (*type != format::GgmlType::kF32 && *type != format::GgmlType::kF16)
      return report_error("HF-family models are written with --type f32 or f16 (quantize the GGUF afterwards)");
    synth::RandomHfModelOptions options{
        *shape,
        *type == format::GgmlType::kF16 ? DType::kF16 : DType::kF32,
        o.seed,
        o.output,
        o.format == "gguf",
        o.tokenizer,
        [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); }};
    return finish_written(synth::write_random_hf_model(options), shape->hf_architecture);
  }
  if (!o.tokenizer.empty()) return report_error("--tokenizer needs an HF-family shape or --format hf");
  synth::RandomModelOptions options{
      *shape, *type, o.seed, o.output,
      [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); }};
  Status st = synth::write_random_model(options);
  progress.finish();
  if (!st.ok()) return report_error(st.message());
  std::error_code ec;
  const auto size = std::filesystem::file_size(o.output, ec);
  if (o.splits > 1) {
    Status split = split_written_model(o.output, o.splits);
    if (!split.ok()) return report_error(split.message());
  }
  std::fprintf(stderr, "pagoda: wrote %s%s: %s, %d layers, %.2fB parameters, %s weights, %.1f MiB\n", o.output.c_str(),
               o.splits > 1 ? fmt::format(" (as {} splits)", o.splits).c_str() : "",
               shape->name.c_str(), shape->num_layers, double(shape->num_params()) / 1e9, o.type.c_str(),
               ec ? 0.0 : double(size) / (1 << 20));
  return 0;
}

}  // namespace

void add_gen_model_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<GenModelOptions>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a random-weight model with a real model's shapes");
  add_common_options(*cmd, options->common, /*with_model=*/false);
  std::string names;
  for (const std::string& n : synth::model_shape_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--shape", options->shape, "one of: " + names)->required();
  cmd->add_option("--format", options->format, "gguf, or hf (a folder: config.json + model.safetensors)")
      ->capture_default_str();
  cmd->add_option("--tokenizer", options->tokenizer, "a tokenizer.json to copy into the HF folder");
  cmd->add_option("--vocab", options->vocab_size, "cut the vocabulary to N tokens (small test models)");
  cmd->add_option("--type", options->type, "weight type of the matrices: f32, f16, q8_0 or q4_0")
      ->capture_default_str();
  cmd->add_option("-o,--output", options->output, "output GGUF path, or folder for --format hf")->required();
  cmd->add_option("--seed", options->seed, "random seed")->capture_default_str();
  cmd->add_option("--splits", options->splits,
                  "write the GGUF as N files (gguf-split's OUT-00001-of-0000N.gguf ..., loaded as one model)")
      ->capture_default_str();
  cmd->add_option("--layers", options->num_layers, "keep only the first N layers (to fit memory and time)");
  cmd->callback([options, &exit_code] { exit_code = gen_model(*options); });
}

}  // namespace pagoda::cli
