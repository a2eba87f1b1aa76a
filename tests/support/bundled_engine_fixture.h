// BundledEngineTest: the fixture the engine's tests share: the bundled stories260K loaded once per suite, a small
// engine configuration (256 positions, 32 sequences, 64 tokens a step, 2 threads; optional n-gram drafts), greedy
// story requests of mixed lengths, and helpers that run one request or a batch to the end.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "loader/loaded_model.h"
#include "support/bundled_model_fixture.h"

namespace pagoda {

class BundledEngineTest : public BundledModelTest {
 protected:
  // num_spec_tokens > 0: prompt-lookup drafts, at most that many a step.
  static EngineConfig config(int32_t num_blocks, int32_t block_size = 16, int32_t num_spec_tokens = 0) {
    EngineConfig c;
    c.max_seq_len = 256;
    c.scheduler.max_num_seqs = 32;
    c.scheduler.max_batched_tokens = 64;
    c.kv.num_blocks = num_blocks;
    c.kv.block_size = block_size;
    c.num_threads = 2;
    if (num_spec_tokens > 0) {
      c.spec.method = SpecMethod::kNgram;
      c.scheduler.num_speculative_tokens = num_spec_tokens;
    }
    return c;
  }
  static std::unique_ptr<Engine> make(const EngineConfig& c) {
    auto engine = Engine::create(*loaded_->model, *loaded_->tokenizer, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    return engine.ok() ? std::move(engine).value() : nullptr;
  }
  static GenerateRequest request(const std::string& text, int32_t max_tokens, float temperature) {
    GenerateRequest r;
    r.prompt = loaded_->tokenizer->encode(text, true);
    r.sampling.temperature = temperature;
    r.sampling.max_tokens = max_tokens;
    return r;
  }
  static GenerateRequest greedy(const std::string& text, int32_t max_tokens) { return request(text, max_tokens, 0.0f); }
  // 16 story starts of mixed lengths, asking for min_tokens + 13 * (i % 7) tokens (stories repeat names and
  // phrases: n-gram drafts get accepted).
  static std::vector<GenerateRequest> mixed_requests(int32_t min_tokens) {
    const char* starts[] = {"Once upon a time",
                            "The cat",
                            "Lily and Ben went to the park. They",
                            "One day, a little boy named Tim found a big red ball in the garden. He",
                            "The sun",
                            "Mom said"};
    std::vector<GenerateRequest> out;
    for (int i = 0; i < 16; ++i) out.push_back(greedy(starts[i % 6], min_tokens + 13 * (i % 7)));
    return out;
  }
  static RequestOutput run_alone(Engine& engine, GenerateRequest r) {
    auto h = engine.submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.error();
    return h.ok() ? h->stream->wait_all() : RequestOutput{};
  }
  // Submits all at once (Engine::submit_batch: the loop's next step sees every one, so what runs together, and
  // preemption under a small pool, does not depend on this thread's speed), then waits for each.
  static std::vector<RequestOutput> run_batch(Engine& engine, const std::vector<GenerateRequest>& requests) {
    auto handles = engine.submit_batch(requests);
    EXPECT_TRUE(handles.ok()) << handles.error();
    std::vector<RequestOutput> out;
    if (!handles.ok()) return out;
    for (RequestHandle& h : *handles) out.push_back(h.stream->wait_all());
    return out;
  }
};

}  // namespace pagoda
