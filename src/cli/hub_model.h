// The CLI's side of models by name: `-hf ORG/NAME[:QUANT]` and `--hf-file` resolved through hub::fetch_model with a
// progress display per file on stderr (a bar on a terminal, plain lines otherwise), and llama.cpp's spelling of the
// flags (`-hf`, `-hff`: several letters after one dash, which CLI11 does not parse) rewritten to the long names.
#pragma once

#include <pagoda/status.h>

#include <string>
#include <vector>

#include "hub/model_fetch.h"

namespace pagoda::cli {

// The model the flags name, fetched or found in the cache; prints what it did on stderr.
Result<hub::FetchedModel> fetch_hf_model(const std::string& spec, const std::string& file);

}  // namespace pagoda::cli
