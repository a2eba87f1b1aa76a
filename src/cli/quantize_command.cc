// `pagoda quantize IN.gguf OUT.gguf --type Q4_K_M|Q5_K_M|Q6_K|Q8_0|Q4_0|Q3_K_M|Q2_K|...|int8|awq-int4 [--imatrix FILE]
// [--group 32|64|128] [--calib TEXT]`: prints every tensor with the type it got (and, for AWQ, the alpha its scale
// search chose), and the file's size before and after. llama-quantize's file types (any case) are written as it
// writes them (format/llama_quantizer.h), with an importance matrix when --imatrix names one. For awq-int4 the
// input model first runs over the calibration text (the bundled default, or --calib) to collect its linear layers'
// input statistics.
#include "cli/quantize_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "assets/calibration_text.h"
#include "cli/common_options.h"
#include "cli/progress.h"
#include "eval/awq_calibration.h"
#include "format/gguf_quantizer.h"
#include "format/imatrix_reader.h"
#include "format/llama_quantizer.h"
#include "loader/quantize_on_load.h"
#include "kernels/kernels.h"

namespace pagoda::cli {
namespace {

struct QuantizeCliOptions {
  CommonOptions common;
  std::string input;
  std::string output;
  std::string type;
  int32_t group = 128;
  std::optional<std::string> calib_path;
  int32_t calib_ctx = 256;
  std::optional<std::string> imatrix_path;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i == 0 ? "" : " x ") + std::to_string(dims[i]);
  return out;
}

Result<format::GgmlType> resolve_type(const QuantizeCliOptions& o) {
  if (o.type == "awq-int4" && o.group != 32 && o.group != 64 && o.group != 128)
    return make_error(fmt::format("--group must be 32, 64 or 128, got {}", o.group));
  Result<std::optional<format::GgmlType>> t = weight_quantization_type(o.type, o.group);
  if (!t.ok() || !*t)
    return make_error(fmt::format("--type {} is not supported (supported: {}, int8, awq-int4)", o.type,
                                  format::llama_file_type_names()));
  return **t;
}

void print_report(const format::QuantizeReport& report, bool awq) {
  std::printf("%-32s %-14s %-6s %-13s %12s %12s  %s\n", "tensor", "shape", "from", "to", "bytes", "bytes after",
              awq ? "awq: alpha, calibration output MSE (s and clipping; s only; plain)" : "");
  for (const format::QuantizedTensorReport& t : report.tensors) {
    std::string awq_note;
    if (t.has_awq_scale)
      awq_note =
          fmt::format("alpha {:.2f}, MSE {:.3g} vs {:.3g} ({:+.1f}%)", t.awq_alpha, t.awq_mse, t.awq_mse_unscaled,
                      t.awq_mse_unscaled > 0 ? 100.0 * (t.awq_mse / t.awq_mse_unscaled - 1.0) : 0.0);
    std::printf("%-32s %-14s %-6s %-13s %12llu %12llu  %s\n", t.name.c_str(), dims_text(t.dims).c_str(),
                std::string(format::ggml_type_name(t.from)).c_str(), std::string(format::ggml_type_name(t.to)).c_str(),
                static_cast<unsigned long long>(t.bytes_before), static_cast<unsigned long long>(t.bytes_after),
                awq_note.c_str());
  }
  std::printf("file: %.2f MiB -> %.2f MiB (%.1f%%)\n", double(report.file_bytes_before) / (1 << 20),
              double(report.file_bytes_after) / (1 << 20),
              100.0 * double(report.file_bytes_after) / double(std::max<uint64_t>(1, report.file_bytes_before)));
}

Result<format::CalibrationStats> calibrate(const QuantizeCliOptions& o, const PagodaConfig& config) {
  eval::AwqCalibrationOptions c;
  c.num_threads = config.threads;
  c.chunk_tokens = o.calib_ctx;
  if (o.calib_path) {
    PAGODA_ASSIGN_OR_RETURN(c.text, read_text_file(*o.calib_path));
    c.text_name = *o.calib_path;
  } else {
    c.text = std::string(default_calibration_text());
    c.text_name = "the built-in text";
  }
  return eval::collect_awq_calibration(o.input, c);
}

int quantize(const QuantizeCliOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  const std::optional<format::LlamaFileType> llama_type = format::parse_llama_file_type(o.type);
  if (o.imatrix_path && !llama_type)
    return report_error(fmt::format("--imatrix applies to llama.cpp's file types ({}), not --type {}",
                                    format::llama_file_type_names(), o.type));
  if (llama_type) {
    if (o.calib_path) return report_error("--calib applies to --type awq-int4 only");
    if (o.input == o.output) return report_error("the output must be another file than the input");
    std::optional<format::ImportanceMatrix> imatrix;
    if (o.imatrix_path) {
      Result<format::ImportanceMatrix> m = format::read_importance_matrix(*o.imatrix_path);
      if (!m.ok()) return report_error("--imatrix: " + m.error());
      imatrix = std::move(m).value();
    }
    Progress progress("quantize");
    format::LlamaQuantizeOptions options{
        o.input, o.output, *llama_type, imatrix ? &*imatrix : nullptr, o.imatrix_path.value_or(""),
        [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); }};
    Result<format::QuantizeReport> report = format::quantize_gguf_llama(options);
    progress.finish();
    if (!report.ok()) return report_error(report.error());
    print_report(*report, false);
    if (imatrix)
      std::printf("importance matrix: %zu entries from %s\n", imatrix->weights.size(), o.imatrix_path->c_str());
    return 0;
  }
  Result<format::GgmlType> type = resolve_type(o);
  if (!type.ok()) return report_error(type.error());
  if (o.input == o.output) return report_error("the output must be another file than the input");
  const bool awq = o.type == "awq-int4";
  if (!awq && o.calib_path) return report_error("--calib applies to --type awq-int4 only");
  if (o.calib_ctx < 2) return report_error("--calib-ctx must be at least 2");
  std::optional<format::CalibrationStats> stats;
  if (awq) {
    Result<format::CalibrationStats> s = calibrate(o, *config);
    if (!s.ok()) return report_error("calibration: " + s.error());
    stats = std::move(s).value();
  }
  Progress progress("quantize");
  format::QuantizeOptions options{
      o.input, o.output, *type,
      [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); },
      stats ? &*stats : nullptr};
  Result<format::QuantizeReport> report = format::quantize_gguf(options);
  progress.finish();
  if (!report.ok()) return report_error(report.error());
  print_report(*report, awq);
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "Quantize a GGUF's weight matrices (llama.cpp's Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, ...; int8, awq-int4)");
  add_common_options(*cmd, options->common, /*with_model=*/false);
  cmd->add_option("input", options->input, "input GGUF (f32/f16/bf16 weights)")->required();
  cmd->add_option("output", options->output, "output GGUF")->required();
  cmd->add_option("--type", options->type,
                  "a llama.cpp file type (" + format::llama_file_type_names() +
                      ", any case; written as llama-quantize writes it), int8 (per-channel W8A8) or awq-int4")
      ->required();
  cmd->add_option("--imatrix", options->imatrix_path,
                  "llama.cpp file types: an importance matrix GGUF (llama-imatrix's output) to weigh the quantizers");
  cmd->add_option("--group", options->group,
                  "awq-int4: values per group, 32, 64 or 128; a tensor whose rows it does not divide gets the "
                  "largest smaller group that does")
      ->capture_default_str();
  cmd->add_option("--calib", options->calib_path,
                  "awq-int4: calibration text file (default: a short built-in English text)");
  cmd->add_option("--calib-ctx", options->calib_ctx, "awq-int4: tokens per calibration chunk")->capture_default_str();
  cmd->callback([options, &exit_code] { exit_code = quantize(*options); });
}

}  // namespace pagoda::cli
