// Picking a repository's model files: the quant tag match, the split set, the safetensors folder.
#include "hub/model_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>

#include "format/gguf_split.h"
#include "hub/hub_cache.h"

namespace pagoda::hub {
namespace {

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool is_model_gguf(std::string_view path) {
  if (!path.ends_with(".gguf")) return false;
  const std::string name = base_name(path);
  for (std::string_view word : {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"})
    if (name.find(word) != std::string::npos) return false;
  return true;
}

// The first split of a set or a single file (the one a model is named by).
bool is_first_file(std::string_view path) {
  const std::optional<format::GgufSplitName> split = format::parse_gguf_split_name(path);
  return !split || split->index == 1;
}

// `quant` followed by '.' or '-' in the path, case-insensitively.
bool names_quant(std::string_view path, std::string_view quant) {
  const std::string p = upper(path);
  const std::string q = upper(quant);
  for (size_t at = p.find(q); at != std::string::npos; at = p.find(q, at + 1)) {
    const size_t end = at + q.size();
    if (end < p.size() && (p[end] == '.' || p[end] == '-')) return true;
  }
  return false;
}

// The bits of the quant tag ending the file's name ("...-Q5_K_M.gguf" -> 5, "...-F16.gguf" -> 16), or -1.
int quant_bits(std::string_view path) {
  std::string stem = base_name(path);
  stem.resize(stem.size() - 5);  // ".gguf"
  if (std::optional<format::GgufSplitName> split = format::parse_gguf_split_name(base_name(path)))
    stem = base_name(split->prefix);
  const size_t sep = stem.find_last_of("-.");
  const std::string tag = upper(sep == std::string::npos ? stem : stem.substr(sep + 1));
  const size_t digit = tag.find_first_of("0123456789");
  if (digit == std::string::npos || digit > 2) return -1;
  int bits = 0;
  for (size_t i = digit; i < tag.size() && std::isdigit(static_cast<unsigned char>(tag[i])) && bits < 1000; ++i)
    bits = bits * 10 + (tag[i] - '0');
  return bits;
}

std::vector<std::string> split_set(const std::vector<std::string>& paths, const std::string& first) {
  const std::optional<format::GgufSplitName> split = format::parse_gguf_split_name(first);
  if (!split) return {first};
  std::vector<std::string> set;
  for (const std::string& p : paths) {
    const std::optional<format::GgufSplitName> s = format::parse_gguf_split_name(p);
    if (s && s->prefix == split->prefix && s->count == split->count) set.push_back(p);
  }
  return set;
}

std::string gguf_list(const std::vector<std::string>& paths) {
  std::string list;
  for (const std::string& p : paths)
    if (p.ends_with(".gguf") && is_first_file(p)) list += (list.empty() ? "" : ", ") + p;
  return list.empty() ? "none" : list;
}

bool is_folder_file(const std::string& path) {
  static constexpr std::string_view kOtherWeights[] = {".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ot",
                                                       ".tflite", ".gguf", ".ckpt", ".mlmodel", ".npz", ".zip"};
  if (path == ".gitattributes" || base_name(path).starts_with(".")) return false;
  for (std::string_view ext : kOtherWeights)
    if (path.ends_with(ext)) return false;
  return true;
}

}  // namespace

Result<RepoSpec> parse_repo_spec(std::string_view spec) {
  RepoSpec r;
  const size_t colon = spec.find(':');
  r.repo = std::string(spec.substr(0, colon));
  if (colon != std::string_view::npos) {
    r.quant = std::string(spec.substr(colon + 1));
    if (r.quant.empty() || r.quant.find_first_of("/:") != std::string::npos)
      return make_error(fmt::format("-hf '{}': expected ORG/NAME[:QUANT]", spec));
  }
  PAGODA_RETURN_IF_ERROR(check_repo_id(r.repo));
  return r;
}

Result<ModelFiles> choose_model_files(const std::vector<std::string>& paths, std::string_view repo,
                                      std::string_view quant, std::string_view exact_file) {
  ModelFiles chosen;
  if (!exact_file.empty()) {
    if (std::find(paths.begin(), paths.end(), exact_file) == paths.end())
      return make_error(fmt::format("{} has no file '{}' (GGUF files: {})", repo, exact_file, gguf_list(paths)),
                        StatusCode::kNotFound);
    const std::string file(exact_file);
    if (!file.ends_with(".gguf")) return make_error(fmt::format("--hf-file '{}' is not a .gguf file", file));
    if (!is_first_file(file))
      return make_error(fmt::format("--hf-file '{}' is a later split; name the first one", file));
    chosen.model_file = file;
    chosen.files = split_set(paths, file);
    return chosen;
  }
  std::vector<std::string> models;
  for (const std::string& p : paths)
    if (is_model_gguf(p) && is_first_file(p)) models.push_back(p);

  if (!models.empty()) {
    std::vector<std::string> wanted;
    if (!quant.empty()) {
      wanted.push_back(std::string(quant));
    } else {
      wanted = {std::string(kDefaultQuant), "Q8_0"};
    }
    for (const std::string& q : wanted) {
      for (const std::string& m : models) {
        if (names_quant(m, q)) {
          chosen.model_file = m;
          break;
        }
      }
      if (!chosen.model_file.empty()) break;
    }
    if (chosen.model_file.empty() && !quant.empty())
      return make_error(fmt::format("{} has no {} GGUF (GGUF files: {})", repo, quant, gguf_list(paths)),
                        StatusCode::kNotFound);
    if (chosen.model_file.empty()) {
      // Neither default: the type closest to 4 bits, the larger on a tie, the first file if none names its type.
      int best_distance = INT_MAX;
      int best_bits = -1;
      for (const std::string& m : models) {
        const int bits = quant_bits(m);
        const int distance = bits < 0 ? INT_MAX - 1 : std::abs(bits - 4);
        if (chosen.model_file.empty() || distance < best_distance || (distance == best_distance && bits > best_bits)) {
          chosen.model_file = m;
          best_distance = distance;
          best_bits = bits;
        }
      }
    }
    chosen.files = split_set(paths, chosen.model_file);
    return chosen;
  }

  if (!quant.empty())
    return make_error(fmt::format("{} has no GGUF files, so no :{} to pick", repo, quant), StatusCode::kNotFound);
  if (std::find(paths.begin(), paths.end(), "config.json") == paths.end())
    return make_error(fmt::format("{} has neither GGUF files nor a config.json with safetensors weights", repo),
                      StatusCode::kNotFound);
  bool has_weights = false;
  for (const std::string& p : paths) {
    if (!is_folder_file(p)) continue;
    chosen.files.push_back(p);
    has_weights = has_weights || p.ends_with(".safetensors");
  }
  if (!has_weights)
    return make_error(fmt::format("{} has a config.json but no .safetensors weights", repo), StatusCode::kNotFound);
  return chosen;
}

}  // namespace pagoda::hub
