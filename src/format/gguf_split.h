// GGUF splits (llama.cpp's gguf-split layout): a model's tensors spread over `PREFIX-00001-of-0000N.gguf` ...
// files, each carrying split.no / split.count / split.tensors.count, the first one also every other metadata key.
// Owns the file naming and the writer of such a set; reading a set as one model is GgufFile::open's (gguf_reader.h).
#pragma once

#include <pagoda/status.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_reader.h"

namespace pagoda::format {

struct GgufSplitName {
  std::string prefix;  // the path up to "-00001-of-00003.gguf"
  int index = 0;       // 1-based, as in the name
  int count = 0;
};

// The file of split `index` (1-based) of `count`: "PREFIX-0000I-of-0000N.gguf".
std::string gguf_split_path(std::string_view prefix, int index, int count);
// The split name's parts when `path` ends in "-NNNNN-of-MMMMM.gguf" (1 <= index <= count), nullopt otherwise.
std::optional<GgufSplitName> parse_gguf_split_name(std::string_view path);

// Writes `source`'s metadata and tensors as `count` splits named from `prefix` (tensors in file order, spread so each
// split holds about the same bytes; the first split gets every metadata key). Each file is written through a
// temporary name (GgufWriter::write). Returns the paths written. Errors: count < 2, more splits than tensors, I/O.
Result<std::vector<std::string>> write_gguf_splits(const GgufFile& source, const std::string& prefix, int count);

}  // namespace pagoda::format
