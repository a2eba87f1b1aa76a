// A model split over ranks without mpirun: the bundled model's parts run on threads
// (tests/support/thread_collectives.h) through the real step protocol (rank 0's ParallelLeader, the others'
// worker loops), for tensor parallel 2 and 4, pipeline parallel 2 and 3, and both (2 x 2). Each gives the whole
// model's logits within 1e-4 relative and its greedy text token for token, through the Engine with one request
// (its prompt over several steps) and with 16 mixed requests at once. tests/e2e/cli_parallel_test.cc runs the real
// binary under mpirun.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "loader/loaded_model.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "parallel/parallel_step.h"
#include "support/thread_collectives.h"

namespace pagoda {
namespace {

// Every rank of one split: the world's collectives, each stage's tensor-parallel group, each rank's part of the
// model, and the worker threads of ranks 1.. (they run until the leader is destroyed).
class SplitModel {
 public:
  SplitModel(parallel::ParallelLayout layout) : layout_(layout), world_(layout.num_ranks()) {
    const int32_t n = layout.num_ranks();
    for (int32_t s = 0; s < layout.pipeline_parallel; ++s)
      stage_groups_.push_back(std::make_unique<testing::ThreadGroup>(layout.tensor_parallel));
    for (int32_t r = 0; r < n; ++r) {
      world_comms_.push_back(std::make_unique<testing::ThreadCollectives>(world_, r));
      const int32_t stage = layout.stage_of(r);
      tp_comms_.push_back(
          std::make_unique<testing::ThreadCollectives>(*stage_groups_[size_t(stage)], layout.tp_rank_of(r)));
      ModelOptions o;
      if (layout.tensor_parallel > 1) o.tensor_parallel = tp_comms_.back().get();
      o.pipeline_stage = stage;
      o.pipeline_stages = layout.pipeline_parallel;
      Result<LoadedModel> part = load_model("", kernels::best_kernels(), o);
      EXPECT_TRUE(part.ok()) << part.error();
      parts_.push_back(std::move(part).value());
    }
    for (int32_t r = 1; r < n; ++r)
      workers_.emplace_back(
          [this, r] { parallel::run_parallel_worker(*parts_[size_t(r)].model, *world_comms_[size_t(r)], layout_, 1); });
    leader_ = std::make_unique<parallel::ParallelLeader>(std::move(parts_[0].model), *world_comms_[0], layout_);
  }
  ~SplitModel() {
    leader_.reset();  // stops the workers
    for (std::thread& w : workers_) w.join();
  }
  const Model& leader() const { return *leader_; }
  const Collectives& world_rank(int32_t r) const { return *world_comms_[size_t(r)]; }

 private:
  parallel::ParallelLayout layout_;
  testing::ThreadGroup world_;
  std::vector<std::unique_ptr<testing::ThreadGroup>> stage_groups_;
  std::vector<std::unique_ptr<testing::ThreadCollectives>> world_comms_, tp_comms_;
  std::vector<LoadedModel> parts_;
  std::vector<std::thread> workers_;
  std::unique_ptr<parallel::ParallelLeader> leader_;
};

class SplitModelTest : public ::testing::TestWithParam<parallel::ParallelLayout> {
 protected:
  static void SetUpTestSuite() {
    Result<LoadedModel> whole = load_model("", kernels::best_kernels());
    ASSERT_TRUE(whole.ok()) << whole.error();
    whole_ = new LoadedModel(std::move(whole).value());
  }
  static void TearDownTestSuite() {
    delete whole_;
    whole_ = nullptr;
  }
  static LoadedModel* whole_;
};

LoadedModel* SplitModelTest::whole_ = nullptr;

// The logits of every token of `prompt` as one prefill step.
std::vector<float> prompt_logits(const Model& m, const std::vector<TokenId>& prompt) {
  const int32_t n = int32_t(prompt.size());
  KvStorage kv(m.config().kv_shape(), 4, 16);
  Workspace ws(m.config(), n, 64, n, 1);
  ThreadPool pool(1);
  std::vector<Pos> positions(prompt.size());
  std::vector<int32_t> slots(prompt.size()), rows(prompt.size());
  for (int32_t i = 0; i < n; ++i) positions[size_t(i)] = slots[size_t(i)] = rows[size_t(i)] = i;
  std::vector<int32_t> starts{0, n}, lens{n};
  std::vector<BlockId> table{0, 1, 2, 3};
  BatchView b;
  b.tokens = prompt;
  b.positions = positions;
  b.slot_ids = slots;
  b.seq_starts = starts;
  b.context_lens = lens;
  b.block_tables = BlockTableView{table.data(), 1, 4};
  b.logits_rows = rows;
  const LogitsView l = m.forward(b, kv.view(), ws, pool);
  return std::vector<float>(l.data, l.data + int64_t(l.num_rows) * l.vocab_size);
}

TEST_P(SplitModelTest, LogitsWithin1e4OfTheWholeModelsAndTheSameGreedyText) {
  SplitModel split(GetParam());
  const Tokenizer& tok = *whole_->tokenizer;
  const std::vector<TokenId> prompt = tok.encode("Once upon a time, there was a little girl named Lily.", true);
  const std::vector<float> a = prompt_logits(*whole_->model, prompt), b = prompt_logits(split.leader(), prompt);
  ASSERT_EQ(a.size(), b.size());
  const size_t vocab = size_t(whole_->model->config().vocab_size);
  for (size_t row = 0; row < prompt.size(); ++row) {
    float max_abs = 0.0f, max_diff = 0.0f;
    for (size_t v = 0; v < vocab; ++v) {
      max_abs = std::max(max_abs, std::fabs(a[row * vocab + v]));
      max_diff = std::max(max_diff, std::fabs(a[row * vocab + v] - b[row * vocab + v]));
    }
    EXPECT_GT(max_abs, 0.0f);
    EXPECT_LE(max_diff, 1e-4f * max_abs) << "row " << row;
  }
  auto greedy_alone = [&](const Model& model, int32_t prompt_tokens_per_step) {
    EngineConfig c;
    c.max_seq_len = 256;
    c.scheduler.max_num_seqs = 1;
    c.scheduler.max_batched_tokens = prompt_tokens_per_step;
    c.kv.num_blocks = 16;
    c.num_threads = 1;
    auto engine = Engine::create(model, tok, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    GenerateRequest r;
    r.prompt = prompt;
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 120;
    return (*engine)->submit(std::move(r))->stream->wait_all().new_tokens;
  };
  const std::vector<TokenId> x = greedy_alone(*whole_->model, 256);
  const std::vector<TokenId> y = greedy_alone(split.leader(), 16);  // the prompt over several steps
  EXPECT_EQ(x, y);
  EXPECT_GT(x.size(), 20u);
}

TEST_P(SplitModelTest, TheEngineGivesTheSameTextFor16MixedRequestsWithSharedPrefixes) {
  SplitModel split(GetParam());
  const Tokenizer& tok = *whole_->tokenizer;
  EngineConfig c;
  c.max_seq_len = 256;
  c.scheduler.max_num_seqs = 16;
  c.scheduler.max_batched_tokens = 48;  // prompts over several steps, mixed with decodes
  c.kv.num_blocks = 96;
  c.kv.block_size = 8;
  c.num_threads = 1;
  const char* starts[] = {"Once upon a time", "Once upon a time, there was a", "The cat",
                          "Lily and Ben went to the park. They",
                          "One day, a little boy named Tim found a big red ball"};
  std::vector<GenerateRequest> requests;
  for (int i = 0; i < 16; ++i) {
    GenerateRequest r;
    r.prompt = tok.encode(starts[i % 5], true);
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 6 + 11 * (i % 6);
    requests.push_back(r);
  }
  auto run_all = [&](const Model& model) {
    auto engine = Engine::create(model, tok, c);
    EXPECT_TRUE(engine.ok()) << engine.error();
    std::vector<RequestHandle> handles;
    for (const GenerateRequest& r : requests) handles.push_back(*(*engine)->submit(r));
    std::vector<std::vector<TokenId>> out;
    for (RequestHandle& h : handles) out.push_back(h.stream->wait_all().new_tokens);
    EXPECT_GT((*engine)->stats().kv.num_prefix_hit_tokens, 0);  // block copies and shared blocks on every rank
    return out;
  };
  const std::vector<std::vector<TokenId>> whole = run_all(*whole_->model), parts = run_all(split.leader());
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(whole[i], parts[i]) << "request " << i;
  // Pipeline stages passed hidden states to each other (ranks 0 and 1 are stages 0 and 1 unless tensor parallel).
  if (GetParam().pipeline_parallel > 1) {
    EXPECT_GT(split.world_rank(1).bytes_communicated(), 0);
  }
}

std::string layout_name(const ::testing::TestParamInfo<parallel::ParallelLayout>& info) {
  return "tp" + std::to_string(info.param.tensor_parallel) + "_pp" + std::to_string(info.param.pipeline_parallel);
}

INSTANTIATE_TEST_SUITE_P(Layouts, SplitModelTest,
                         ::testing::Values(parallel::ParallelLayout{2, 1}, parallel::ParallelLayout{4, 1},
                                           parallel::ParallelLayout{1, 2}, parallel::ParallelLayout{1, 3},
                                           parallel::ParallelLayout{2, 2}),
                         layout_name);

}  // namespace
}  // namespace pagoda
