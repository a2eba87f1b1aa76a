// LogitsView: the model's output for the rows a BatchView asked for: the logits of its logits_rows and the final
// hidden states of its hidden_rows. Non-owning; points into the Workspace and stays valid until the next forward
// call with that workspace.
#pragma once

#include <cstdint>
#include <span>

namespace pagoda {

struct LogitsView {
  float* data = nullptr;  // f32 [num_rows, vocab_size]
  int32_t num_rows = 0;
  int32_t vocab_size = 0;
  const float* hidden = nullptr;  // f32 [num_hidden_rows, hidden_dim]: after the last norm, before the classifier
  int32_t num_hidden_rows = 0;
  int32_t hidden_dim = 0;

  std::span<float> row(int32_t row_idx) const { return {data + int64_t(row_idx) * vocab_size, size_t(vocab_size)}; }
  std::span<const float> hidden_row(int32_t row_idx) const {
    return {hidden + int64_t(row_idx) * hidden_dim, size_t(hidden_dim)};
  }
};

}  // namespace pagoda
