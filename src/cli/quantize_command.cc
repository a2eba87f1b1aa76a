// `pagoda quantize IN.gguf OUT.gguf --type q8_0|q4_0`: prints every tensor with the type it got, and the
// file's size before and after.
#include "cli/quantize_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <memory>

#include "cli/common_options.h"
#include "cli/progress.h"
#include "format/gguf_quantizer.h"

namespace pagoda::cli {
namespace {

struct QuantizeCliOptions {
  CommonOptions common;
  std::string input;
  std::string output;
  std::string type;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i == 0 ? "" : " x ") + std::to_string(dims[i]);
  return out;
}

int quantize(const QuantizeCliOptions& o) {
  Result<PagodaConfig> config = resolve_config(o.common);
  if (!config.ok()) return report_error(config.error());
  format::GgmlType type;
  if (o.type == "q8_0")
    type = format::GgmlType::kQ8_0;
  else if (o.type == "q4_0")
    type = format::GgmlType::kQ4_0;
  else
    return report_error(fmt::format("--type {} is not supported (supported: q8_0, q4_0)", o.type));
  if (o.input == o.output) return report_error("the output must be another file than the input");
  Progress progress("quantize");
  format::QuantizeOptions options{
      o.input, o.output, type,
      [&progress](int32_t done, int32_t total, const std::string& name) { progress.update(done, total, name); }};
  Result<format::QuantizeReport> report = format::quantize_gguf(options);
  progress.finish();
  if (!report.ok()) return report_error(report.error());
  std::printf("%-32s %-14s %-6s %-6s %12s %12s\n", "tensor", "shape", "from", "to", "bytes", "bytes after");
  for (const format::QuantizedTensorReport& t : report->tensors) {
    std::printf("%-32s %-14s %-6s %-6s %12llu %12llu\n", t.name.c_str(), dims_text(t.dims).c_str(),
                std::string(format::ggml_type_name(t.from)).c_str(), std::string(format::ggml_type_name(t.to)).c_str(),
                static_cast<unsigned long long>(t.bytes_before), static_cast<unsigned long long>(t.bytes_after));
  }
  std::printf("file: %.2f MiB -> %.2f MiB (%.1f%%)\n", double(report->file_bytes_before) / (1 << 20),
              double(report->file_bytes_after) / (1 << 20),
              100.0 * double(report->file_bytes_after) / double(std::max<uint64_t>(1, report->file_bytes_before)));
  return 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize a GGUF's weight matrices (q8_0, q4_0)");
  add_common_options(*cmd, options->common, /*with_model=*/false);
  cmd->add_option("input", options->input, "input GGUF (f32/f16/bf16 weights)")->required();
  cmd->add_option("output", options->output, "output GGUF")->required();
  cmd->add_option("--type", options->type, "q8_0 or q4_0")->required();
  cmd->callback([options, &exit_code] { exit_code = quantize(*options); });
}

}  // namespace pagoda::cli
