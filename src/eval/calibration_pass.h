// run_calibration_pass: the model over a calibration text, for the LinearObserver the model was created with
// (AWQ's activation statistics). The tokens are cut into chunks of at most ctx tokens, each a fresh sequence
// starting with BOS, and every row of every chunk goes through every linear layer, the classifier included. Each
// chunk is one request through an Engine (asking for every prompt row's logits).
#pragma once

#include <pagoda/status.h>

#include <cstdint>
#include <span>

#include "core/types.h"
#include "model/model.h"

namespace pagoda::eval {

struct CalibrationPassReport {
  int32_t num_chunks = 0;
  int64_t num_tokens = 0;  // tokens run, BOS included
};

// `tokens`: the tokenized text (a leading BOS is dropped; each chunk gets its own). Errors: ctx < 2 or above the
// model's context, no token besides BOS, ids outside the vocabulary.
Result<CalibrationPassReport> run_calibration_pass(const Model& model, std::span<const TokenId> tokens, TokenId bos_id,
                                                   int32_t num_threads, int32_t ctx, int32_t max_batch = 128);

}  // namespace pagoda::eval
