// qwen35_test_files: what the Qwen3.5 and Qwen3-Next model tests share: their random GGUFs (gen-model's writer,
// synth/random_qwen35_writer.h, then the file opened), a file written again with its metadata edited, their strided
// test prompt, and the largest difference between two runs' logits. Header-only test support; no product code.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "synth/model_shapes.h"
#include "synth/random_qwen35_writer.h"

namespace pagoda::testing {

// The GGUF at `path`, or nullptr (a failed expectation saying why).
inline std::unique_ptr<format::GgufFile> open_gguf_file(const std::string& path) {
  auto file = format::GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.error();
  return file.ok() ? std::make_unique<format::GgufFile>(std::move(*file)) : nullptr;
}

// A random f32 GGUF of `shape` (seed 7) at `path`, opened; nullptr when either step fails.
inline std::unique_ptr<format::GgufFile> write_random_qwen35_file(const synth::ModelShape& shape,
                                                                  const std::string& path) {
  synth::RandomModelOptions o{shape, format::GgmlType::kF32, 7, path};
  const Status written = synth::write_random_qwen35_model(o);
  EXPECT_TRUE(written.ok()) << written.message();
  return written.ok() ? open_gguf_file(path) : nullptr;
}

// `file` written again at `path`: each metadata value through `edit` (nullopt leaves the key out), the tensors as
// they are, plus an f32 vector of 128 zeros named `extra_tensor` unless that is empty. Returns `path`.
inline std::string rewritten_gguf(
    const format::GgufFile& file, const std::string& path,
    const std::function<std::optional<format::GgufValue>(const std::string&, const format::GgufValue&)>& edit,
    const std::string& extra_tensor = {}) {
  format::GgufWriter w;
  for (const auto& [key, value] : file.metadata())
    if (std::optional<format::GgufValue> v = edit(key, value)) w.set(key, *v);
  for (const format::GgufTensorInfo& t : file.tensors()) w.add_tensor(t.name, t.type, t.dims, t.data, t.size_bytes);
  static const float zeros[128] = {};
  if (!extra_tensor.empty()) w.add_tensor(extra_tensor, format::GgmlType::kF32, {128}, zeros, sizeof(zeros));
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

// `length` tokens spread over the vocabulary: (37 i + 11) mod vocab.
inline std::vector<TokenId> strided_prompt(int32_t length, int32_t vocab) {
  std::vector<TokenId> prompt;
  for (int32_t i = 0; i < length; ++i) prompt.push_back(TokenId((i * 37 + 11) % vocab));
  return prompt;
}

// The largest difference between two runs' logits (a failed expectation when their sizes differ).
inline float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float most = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) most = std::max(most, std::abs(a[i] - b[i]));
  return most;
}

}  // namespace pagoda::testing
