// The ablation's weight files.
#include "bench/ablation_models.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "assets/bundled_model.h"
#include "format/gguf_names.h"
#include "format/gguf_quantizer.h"
#include "format/gguf_reader.h"

namespace pagoda::bench {

Result<AblationModelFiles> AblationModelFiles::prepare(const std::string& model_path, const std::string& scratch_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(scratch_dir, ec)) return make_error(fmt::format("scratch folder {} exists already", scratch_dir));
  if (!fs::create_directories(scratch_dir, ec))
    return make_error(fmt::format("cannot create scratch folder {}: {}", scratch_dir, ec.message()));
  AblationModelFiles files;
  files.scratch_dir_ = scratch_dir;
  files.f32_path_ = model_path;
  if (model_path.empty()) {
    files.f32_path_ = scratch_dir + "/bundled.gguf";
    const std::span<const uint8_t> bytes = bundled_model_gguf();
    std::ofstream out(files.f32_path_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) return make_error(fmt::format("cannot write {}", files.f32_path_));
  }
  {
    PAGODA_ASSIGN_OR_RETURN(format::GgufFile file, format::GgufFile::open(files.f32_path_));
    const std::string probe = format::gguf_tensor::block_tensor(0, format::gguf_tensor::kFfnUp);
    const format::GgufTensorInfo* w = file.find_tensor(probe);
    if (w == nullptr) return make_error(fmt::format("{}: no {} (not a Llama GGUF?)", files.f32_path_, probe));
    if (w->type != format::GgmlType::kF32 && w->type != format::GgmlType::kF16 && w->type != format::GgmlType::kBF16)
      return make_error(fmt::format(
          "{}: the ablation's baseline needs f32 (or f16/bf16) weights, {} is {}; make one with "
          "`pagoda gen-model --type f32` or convert the original",
          files.f32_path_, probe, format::ggml_type_name(w->type)));
    files.baseline_type_ = std::string(format::ggml_type_name(w->type));
    PAGODA_ASSIGN_OR_RETURN(files.model_config_, model_config_from_gguf(file));
  }
  files.q8_0_path_ = scratch_dir + "/q8_0.gguf";
  files.q4_0_path_ = scratch_dir + "/q4_0.gguf";
  for (const auto& [type, path] :
       {std::pair{format::GgmlType::kQ8_0, files.q8_0_path_}, std::pair{format::GgmlType::kQ4_0, files.q4_0_path_}}) {
    format::QuantizeOptions q;
    q.input_path = files.f32_path_;
    q.output_path = path;
    q.type = type;
    PAGODA_ASSIGN_OR_RETURN(format::QuantizeReport report, format::quantize_gguf(q));
    (void)report;
  }
  return files;
}

AblationModelFiles::AblationModelFiles(AblationModelFiles&& o) noexcept
    : scratch_dir_(std::move(o.scratch_dir_)),
      f32_path_(std::move(o.f32_path_)),
      q8_0_path_(std::move(o.q8_0_path_)),
      q4_0_path_(std::move(o.q4_0_path_)),
      baseline_type_(std::move(o.baseline_type_)),
      model_config_(std::move(o.model_config_)) {
  o.scratch_dir_.clear();
}

AblationModelFiles::~AblationModelFiles() {
  if (scratch_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir_, ec);
}

const std::string& AblationModelFiles::path(AblationWeights weights) const {
  switch (weights) {
    case AblationWeights::kQ8_0: return q8_0_path_;
    case AblationWeights::kQ4_0: return q4_0_path_;
    case AblationWeights::kF32: break;
  }
  return f32_path_;
}

}  // namespace pagoda::bench
