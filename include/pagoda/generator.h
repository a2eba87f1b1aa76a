// pagoda's C++ API: load a model, submit prompts, stream or wait for the text, cancel. What an application embeds
// (CTranslate2's generator.h is the model): one Generator per model, thread-safe, with continuous batching across
// every request submitted to it, from any thread. Depends on the standard library and pagoda/status.h only.
//
//   auto gen = pagoda::Generator::load({.model = "model.gguf"});
//   if (!gen.ok()) { std::cerr << gen.error(); return 1; }
//   pagoda::Result<pagoda::GenerationStream> s = (*gen)->submit("Once upon a time", {.max_tokens = 64});
//   while (std::optional<pagoda::GenerationStep> step = s->next()) std::cout << step->text << std::flush;
//
// Link with find_package(pagoda) and target pagoda::pagoda (cmake --install puts both in the prefix).
#pragma once

#include <pagoda/request.h>
#include <pagoda/status.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

struct GeneratorOptions {
  std::string model;                  // a GGUF file, a Hugging Face model folder, or "" for the bundled stories260K
  std::string quantization = "none";  // none | q8_0 | q4_0 | int8 | awq-int4: a float model's weights, at load
  int32_t num_threads = 0;            // 0: one per core (1 for a model of a few million weights)
  int32_t max_seq_len = 0;            // prompt + output tokens of one sequence; 0: the model's context length
  int32_t max_batch_size = 0;         // sequences decoded together; 0: from the KV pool
  int64_t kv_cache_bytes = 0;         // the KV pool; 0: a share of the free RAM
  // The KV cache's K and V types, llama.cpp's names: "f16" (default), "f32", "bf16", "q8_0", "q4_0" (q8_0 and q4_0
  // need heads of a multiple of 32 values), or pagoda's "int8".
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  bool int8_kv_cache = false;         // INT8 K/V (about a quarter of f32's memory): both types "int8"
  bool prefix_caching = true;         // reuse the KV of prompt prefixes seen before
};

struct GenerationOptions {
  int32_t max_tokens = 256;
  float temperature = 1.0f;  // 0 = greedy
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  float repetition_penalty = 1.0f;
  std::optional<uint64_t> seed;   // same seed, same text
  std::vector<std::string> stop;  // stop strings, not part of the text
  bool ignore_eos = false;
  bool add_bos = true;  // prefix the model's BOS token when it has one
};

// What one engine step added to a request.
struct GenerationStep {
  std::string text;                // UTF-8 complete
  std::vector<int32_t> token_ids;  // sampled since the previous step
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;  // when finished
};

struct GenerationResult {
  std::string text;
  std::vector<int32_t> token_ids;
  FinishReason finish_reason = FinishReason::kLength;
  int32_t num_prompt_tokens = 0;
  int32_t num_cached_prompt_tokens = 0;  // served by the prefix cache
};

// One submitted request's outputs, in order. Move-only; dropping it does not cancel the request (cancel() does).
// A stream must not outlive the Generator that made it.
class GenerationStream {
 public:
  GenerationStream(GenerationStream&&) noexcept;
  GenerationStream& operator=(GenerationStream&&) noexcept;
  ~GenerationStream();
  // Blocks for the next step; nullopt once the finished step has been returned.
  std::optional<GenerationStep> next();
  // Blocks until the end and returns everything not yet taken.
  GenerationResult wait();
  // Ends the request at the next step boundary: its last step has finish_reason kAbort.
  void cancel();
  int64_t id() const;

 private:
  friend class Generator;
  struct State;
  explicit GenerationStream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Generator {
 public:
  // Loads the model and starts the engine's loop thread. Errors: an unreadable or unsupported model, bad options.
  static Result<std::unique_ptr<Generator>> load(const GeneratorOptions& options);
  ~Generator();  // cancels what is still running and joins the engine
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Queues a prompt. Errors (kInvalidArgument, kContextLengthExceeded, kResourceExhausted): bad options, a prompt
  // that does not fit the context, a full queue.
  Result<GenerationStream> submit(std::string_view prompt, const GenerationOptions& options = {});
  // submit() and wait().
  Result<GenerationResult> generate(std::string_view prompt, const GenerationOptions& options = {});

  std::vector<int32_t> tokenize(std::string_view text, bool add_bos = true) const;
  std::string detokenize(const std::vector<int32_t>& token_ids) const;
  // What start-up decided: the model, its weights, the KV pool and the kernels, one line each.
  std::string description() const;

 private:
  struct Impl;
  explicit Generator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda
