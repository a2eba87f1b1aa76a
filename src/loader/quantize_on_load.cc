// Quantizing at load: the float model as a GGUF file (as it is, or converted from an HF folder or the bundled
// bytes), quantize_gguf into a temporary file, load_model on that file, and unlink the temporaries.
#include "loader/quantize_on_load.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "assets/bundled_model.h"
#include "loader/hf_folder_metadata.h"
#include "model/hf_checkpoint.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

// Temporary files, removed when this goes out of scope (a mapped file stays readable after its unlink).
class TemporaryFiles {
 public:
  ~TemporaryFiles() {
    for (const std::string& p : paths_) ::unlink(p.c_str());
  }
  Result<std::string> create(std::string_view stem) {
    std::string pattern = (fs::temp_directory_path() / fmt::format("pagoda-{}-XXXXXX", stem)).string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = ::mkstemp(name.data());
    if (fd < 0) return make_error(fmt::format("cannot create a temporary file in {}", fs::temp_directory_path().string()));
    ::close(fd);
    paths_.emplace_back(name.data());
    return paths_.back();
  }

 private:
  std::vector<std::string> paths_;
};

std::string mib(uint64_t bytes) { return fmt::format("{:.2f} MiB", double(bytes) / double(1 << 20)); }

}  // namespace

Result<std::optional<format::GgmlType>> weight_quantization_type(std::string_view name, int32_t awq_group) {
  if (name == "none") return std::optional<format::GgmlType>();
  if (name == "q8_0") return std::optional(format::GgmlType::kQ8_0);
  if (name == "q4_0") return std::optional(format::GgmlType::kQ4_0);
  if (name == "int8") return std::optional(format::GgmlType::kPagodaInt8);
  if (name == "awq-int4") {
    switch (awq_group) {
      case 32: return std::optional(format::GgmlType::kPagodaAwqInt4G32);
      case 64: return std::optional(format::GgmlType::kPagodaAwqInt4G64);
      case 128: return std::optional(format::GgmlType::kPagodaAwqInt4G128);
      default: return make_error(fmt::format("awq-int4 groups must be 32, 64 or 128 values, got {}", awq_group));
    }
  }
  return make_error(fmt::format("quantization '{}' is not one of none, q8_0, q4_0, int8, awq-int4", name));
}

Result<LoadedModel> load_model_quantized(const std::string& path, const LoadQuantization& q,
                                         const kernels::KernelTable& kernels, const ModelOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  TemporaryFiles temporaries;
  // The float model as a GGUF file.
  std::string float_path = path;
  if (path.empty()) {
    PAGODA_ASSIGN_OR_RETURN(float_path, temporaries.create("bundled"));
    const std::span<const uint8_t> bytes = bundled_model_gguf();
    std::ofstream out(float_path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) return make_error(fmt::format("{}: cannot write the bundled model for quantizing", float_path));
  } else if (is_hf_model_folder(path)) {
    PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<HfCheckpoint> ckpt, HfCheckpoint::open(path));
    if (!ckpt->note().empty()) std::fprintf(stderr, "pagoda: note: %s\n", ckpt->note().c_str());
    PAGODA_ASSIGN_OR_RETURN(float_path, temporaries.create("hf"));
    PAGODA_ASSIGN_OR_RETURN(const std::string note, convert_hf_folder(*ckpt, float_path));
    if (!note.empty()) std::fprintf(stderr, "pagoda: warning: %s\n", note.c_str());
  }
  std::optional<format::CalibrationStats> stats;
  if (q.calibrate) {
    PAGODA_ASSIGN_OR_RETURN(stats, q.calibrate(float_path));
  }
  PAGODA_ASSIGN_OR_RETURN(const std::string quantized_path, temporaries.create("quantized"));
  format::QuantizeOptions qo{float_path, quantized_path, q.type, {}, stats ? &*stats : nullptr};
  Result<format::QuantizeReport> report = format::quantize_gguf(qo);
  if (!report.ok()) return make_error(fmt::format("quantizing at load: {}", report.error()));
  int32_t quantized = 0;
  for (const format::QuantizedTensorReport& t : report->tensors)
    if (t.to != t.from && t.bytes_before > 0) ++quantized;
  PAGODA_ASSIGN_OR_RETURN(LoadedModel loaded, load_model(quantized_path, kernels, options));
  loaded.source = path.empty() ? fmt::format("bundled:{}", kBundledModelName) : path;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (quantized == 0) {
    loaded.weights_note = fmt::format("quantization {}: the weights are stored so already, nothing to quantize",
                                      format::ggml_type_name(q.type));
    return loaded;
  }
  loaded.weights_note = fmt::format("quantized at load to {}: {} of {} tensors, {} -> {} in {:.2f} s{}",
                                    format::ggml_type_name(q.type), quantized, report->tensors.size(),
                                    mib(report->file_bytes_before), mib(report->file_bytes_after), seconds,
                                    stats ? fmt::format(" (calibrated on {} weights)", stats->size()) : "");
  return loaded;
}

}  // namespace pagoda
