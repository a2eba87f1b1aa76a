// Reads llama.cpp's importance matrix GGUF (what `llama-imatrix` writes): per weight, the sums of its input's
// squared activations (`NAME.in_sum2`, one row per expert) and how many tokens each row saw (`NAME.counts`), turned
// into the mean squared activation per input column exactly as llama-quantize does. The legacy .dat format is not
// read (a clear error). Owns no quantization.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace pagoda::format {

struct ImportanceMatrix {
  // Weight name -> values, [num_experts * row_len] (row_len of the weight's rows; one block per expert).
  std::map<std::string, std::vector<float>> weights;
  std::vector<std::string> datasets;  // imatrix.datasets: the text(s) it was computed on
  uint32_t chunk_count = 0;           // imatrix.chunk_count
};

// Errors: unreadable or non-GGUF file (a legacy .dat included), no entries, missing imatrix.* metadata, a sum
// without its counts (or the reverse), non-f32 data, sums not a multiple of the counts, non-finite values.
Result<ImportanceMatrix> read_importance_matrix(const std::string& path);

}  // namespace pagoda::format
