// MatryoshkaDimensions: the shorter embedding sizes a model was trained to give (Matryoshka representation
// learning), as vLLM reads them from config.json (`is_matryoshka`: any size; `matryoshka_dimensions`: only
// those), the check of a request's `dimensions` against them, and the shortening itself (the first N values,
// normalized afterwards by the caller, as vLLM and sentence-transformers do). Pure values and functions: where the
// declaration comes from (model metadata, a flag) is the caller's business.
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace pagoda::server {

struct MatryoshkaDimensions {
  bool any = false;              // every size from 1 to the model's width (is_matryoshka)
  std::vector<int32_t> allowed;  // only these sizes (matryoshka_dimensions); ignored when `any`
  bool truncatable() const { return any || !allowed.empty(); }
};

// "any", "none" or a comma-separated list of sizes ("64,128,256"), each in [1, width]. Errors name the flag.
Result<MatryoshkaDimensions> parse_matryoshka_dimensions(std::string_view text, int64_t width, std::string_view flag);
// For start-up lines: "any size up to 1024", "32, 64, 128 (and 1024)" or "none".
std::string describe_matryoshka_dimensions(const MatryoshkaDimensions& m, int64_t width);

// A request's `dimensions` against the model: its own width is always accepted (nothing is cut); a larger one,
// or a smaller one the model does not declare, is a 400 naming the field.
std::optional<ApiError> check_embedding_dimensions(int64_t requested, int64_t width, const MatryoshkaDimensions& m);

// Keeps the first `dimensions` values of `v` (all of them when it has no more).
void truncate_embedding(std::vector<float>& v, int64_t dimensions);

}  // namespace pagoda::server
