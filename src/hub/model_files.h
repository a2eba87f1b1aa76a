// choose_model_files: which files of a repository make the model `-hf ORG/NAME[:QUANT]` (or `--hf-file`) asks
// for, from the repository's file list (the Hub's listing, or a cached snapshot's files). llama.cpp's rule for
// GGUF repositories: QUANT (default Q4_K_M, then Q8_0) matched case-insensitively in a file name followed by '.' or
// '-', skipping mmproj/imatrix/draft files; with no QUANT and neither present, the type closest to 4 bits; all the
// splits of a split model. A repository without GGUFs is a safetensors folder: config.json, the tokenizer files,
// the *.safetensors weights and their index, without the other weight formats. Pure: lists in, names out.
#pragma once

#include <pagoda/status.h>

#include <string>
#include <string_view>
#include <vector>

namespace pagoda::hub {

inline constexpr std::string_view kDefaultQuant = "Q4_K_M";

struct ModelFiles {
  std::vector<std::string> files;  // to fetch, in the listing's order
  std::string model_file;          // a GGUF (the first split of a split model), or "" for a safetensors folder
};

// `repo` names the repository in messages. Errors: an asked QUANT or file absent (listing what there is), no
// GGUF and no config.json.
Result<ModelFiles> choose_model_files(const std::vector<std::string>& paths, std::string_view repo,
                                      std::string_view quant, std::string_view exact_file);

// "ORG/NAME[:QUANT]" -> repository and QUANT ("" when not given). Errors: not ORG/NAME, an empty QUANT.
struct RepoSpec {
  std::string repo;
  std::string quant;
};
Result<RepoSpec> parse_repo_spec(std::string_view spec);

}  // namespace pagoda::hub
