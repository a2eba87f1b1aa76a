// The qwen35 family (model/arch_qwen35.cc) on gen-model's tiny-qwen35 GGUF (synth/random_qwen35_writer.h):
// - the family's keys become its switches (DeltaNet heads and convolution, every fourth layer gated attention with a
//   quarter of its head rotated, the pre-FFN norm under its llama.cpp name), the state a sequence needs is every
//   DeltaNet layer's window and head matrices, and every DeltaNet and gated-attention tensor is loaded;
// - a prompt gives the same logits, within float rounding, whole, in chunks and one token at a time (the state
//   carries over; steps of 8 tokens or more run the recurrence's chunked form, shorter ones its token-by-token step,
//   and the two sum in different orders), and sequences in one batch each get, bit for bit, the logits they get
//   alone, through either form;
// - qwen35moe (tiny-qwen35moe) has its experts and gated shared expert, and prefills alike whole and chunked;
// - a file whose layers are all DeltaNet, or whose value heads are not a multiple of its key heads, is refused by
//   name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "format/gguf_reader.h"
#include "format/gguf_writer.h"
#include "kernels/kernels.h"
#include "kv/kv_storage.h"
#include "kv/state_storage.h"
#include "model/llama_model.h"
#include "model/model_weights.h"
#include "model/registry.h"
#include "support/qwen35_test_files.h"
#include "support/temp_dir_test.h"
#include "synth/model_shapes.h"
#include "synth/random_qwen35_writer.h"

namespace pagoda {
namespace {

constexpr int32_t kQwen35BlockSize = 16;
constexpr int32_t kQwen35PromptLength = 37;
constexpr int32_t kQwen35Vocab = 512;

class Qwen35Test : public testing_support::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen35");
    ASSERT_TRUE(shape.has_value());
    shape_ = *shape;
    file_ = testing::write_random_qwen35_file(shape_, path("tiny-qwen35.gguf"));
    ASSERT_TRUE(file_);
    prompt_ = testing::strided_prompt(kQwen35PromptLength, kQwen35Vocab);
  }

  std::unique_ptr<Model> model() {
    auto m = create_model(*file_, kernels::best_kernels(), {});
    EXPECT_TRUE(m.ok()) << m.error();
    return m.ok() ? std::move(*m) : nullptr;
  }

  // Every prompt row's logits for `num_seqs` copies of the prompt run side by side in one batch (sequence s in
  // blocks of its own and state slot s), `chunk` tokens of each a step; the rows of sequence `keep`.
  // `last_step_jobs`, when given, receives the pool jobs the last step dispatched.
  std::vector<float> logits(const Model& m, int32_t chunk, int32_t num_seqs = 1, int32_t keep = 0,
                            uint64_t* last_step_jobs = nullptr) const {
    const int32_t n = int32_t(prompt_.size()), blocks_per_seq = (n + kQwen35BlockSize - 1) / kQwen35BlockSize;
    ThreadPool pool(2);
    KvStorage kv(m.config().kv_shape(), blocks_per_seq * num_seqs, kQwen35BlockSize);
    StateStorage states(m.config().state_floats_per_seq(), num_seqs);
    KvCacheView view = kv.view();
    view.state = states.view();
    Workspace ws(m.config(), chunk * num_seqs, blocks_per_seq * kQwen35BlockSize, chunk * num_seqs, 2);
    std::vector<BlockId> table(static_cast<size_t>(blocks_per_seq * num_seqs));
    std::iota(table.rbegin(), table.rend(), 0);  // blocks in reverse: not laid out in order
    std::vector<float> out;
    for (int32_t begin = 0; begin < n; begin += chunk) {
      const int32_t len = std::min(chunk, n - begin);
      std::vector<TokenId> tokens;
      std::vector<Pos> positions;
      std::vector<int32_t> slots, rows, seq_starts{0}, context_lens, state_slots;
      for (int32_t s = 0; s < num_seqs; ++s) {
        for (int32_t i = 0; i < len; ++i) {
          const int32_t p = begin + i;
          tokens.push_back(prompt_[size_t(p)]);
          positions.push_back(p);
          slots.push_back(table[size_t(s * blocks_per_seq + p / kQwen35BlockSize)] * kQwen35BlockSize +
                          p % kQwen35BlockSize);
          rows.push_back(int32_t(rows.size()));
        }
        seq_starts.push_back(seq_starts.back() + len);
        context_lens.push_back(begin + len);
        state_slots.push_back(s);
      }
      BatchView batch;
      batch.tokens = tokens;
      batch.positions = positions;
      batch.slot_ids = slots;
      batch.seq_starts = seq_starts;
      batch.context_lens = context_lens;
      batch.block_tables = BlockTableView{table.data(), num_seqs, blocks_per_seq};
      batch.logits_rows = rows;
      batch.state_slots = state_slots;
      const uint64_t jobs_before = pool.num_jobs_dispatched();
      const LogitsView l = m.forward(batch, view, ws, pool);
      if (last_step_jobs != nullptr) *last_step_jobs = pool.num_jobs_dispatched() - jobs_before;
      for (int32_t r = keep * len; r < (keep + 1) * len; ++r) out.insert(out.end(), l.row(r).begin(), l.row(r).end());
    }
    return out;
  }

  synth::ModelShape shape_;
  std::unique_ptr<format::GgufFile> file_;
  std::vector<TokenId> prompt_;
};

TEST_F(Qwen35Test, KeysBecomeTheFamilysSwitches) {
  auto c = model_config_from_gguf(*file_);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "qwen35");
  EXPECT_TRUE(c->rope_neox);
  EXPECT_TRUE(c->is_delta_net());
  EXPECT_TRUE(c->attn_output_gate);
  EXPECT_TRUE(c->ffn_norm_is_post_attention_norm);
  EXPECT_EQ(c->layer_is_conv, (std::vector<uint8_t>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(c->delta_net_k_heads, 2);
  EXPECT_EQ(c->delta_net_v_heads, 4);
  EXPECT_EQ(c->delta_net_head_dim, 32);
  EXPECT_EQ(c->delta_net_conv_kernel, 4);
  EXPECT_EQ(c->delta_net_conv_dim(), 2 * 64 + 128);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_EQ(c->kv_shape().num_layers, 2);  // K/V for the two attention layers only
  // Six DeltaNet layers, each 3 kept convolution inputs of 256 channels and 4 value heads of 32 x 32.
  EXPECT_EQ(c->state_floats_per_seq(), 6 * (3 * 256 + 4 * 32 * 32));

  auto w = model_weights_from_gguf(*file_, *c);
  ASSERT_TRUE(w.ok()) << w.error();
  for (int32_t l = 0; l < c->num_layers; ++l) {
    const LayerWeights& lw = w->layers[size_t(l)];
    EXPECT_EQ(lw.ffn_norm.size(), 128u);
    if (c->is_conv_layer(l)) {
      EXPECT_EQ(lw.dn_qkv.num_rows, 256);
      EXPECT_EQ(lw.dn_z.num_rows, 128);
      EXPECT_EQ(lw.dn_beta.num_rows, 4);
      EXPECT_EQ(lw.dn_alpha.num_rows, 4);
      EXPECT_EQ(lw.dn_out.num_cols, 128);
      EXPECT_EQ(lw.conv_taps.size(), 4u * 256u);
      EXPECT_EQ(lw.dn_a.size(), 4u);
      EXPECT_TRUE(std::all_of(lw.dn_a.begin(), lw.dn_a.end(), [](float a) { return a < 0.0f; }));
      EXPECT_EQ(lw.dn_dt_bias.size(), 4u);
      EXPECT_EQ(lw.dn_norm.size(), 32u);
      EXPECT_EQ(lw.wq.data, nullptr);
    } else {
      EXPECT_EQ(lw.wq.num_rows, 2 * 4 * 32);  // each head's query and gate
      EXPECT_EQ(lw.q_norm.size(), 32u);
      EXPECT_EQ(lw.k_norm.size(), 32u);
      EXPECT_EQ(lw.dn_qkv.data, nullptr);
    }
  }
}

TEST_F(Qwen35Test, WholeChunkedAndTokenByTokenPrefillsGiveTheSameLogits) {
  auto m = model();
  ASSERT_TRUE(m);
  const std::vector<float> whole = logits(*m, kQwen35PromptLength);
  ASSERT_EQ(whole.size(), size_t(kQwen35PromptLength) * kQwen35Vocab);
  EXPECT_GT(*std::max_element(whole.begin(), whole.end()), 0.0f);
  for (int32_t chunk : {1, 5, 16})
    EXPECT_LT(testing::max_abs_difference(logits(*m, chunk), whole), 1e-5f) << "chunks of " << chunk;
}

TEST_F(Qwen35Test, SequencesInOneBatchGetTheirSoloLogits) {
  auto m = model();
  ASSERT_TRUE(m);
  for (int32_t chunk : {7, 12}) {
    const std::vector<float> alone = logits(*m, chunk);
    for (int32_t keep : {0, 2})
      EXPECT_EQ(logits(*m, chunk, 3, keep), alone) << "sequence " << keep << " of 3, chunks of " << chunk;
  }
}

TEST_F(Qwen35Test, FusionOnAndOffGiveBitIdenticalLogits) {
  // The fused DeltaNet input projections and gated attention's fused Q (with its gate), K and V compute what their
  // unfused sequences compute, for f32 weights (the f32 rows) and Q8_0 ones (the normed input quantized once), one
  // token a step (decode), a few (rows split), and the whole prompt (tokens split).
  for (format::GgmlType type : {format::GgmlType::kF32, format::GgmlType::kQ8_0}) {
    const std::string name = std::string(format::ggml_type_name(type));
    synth::RandomModelOptions o{shape_, type, 7, path("tiny-qwen35-" + name + ".gguf")};
    ASSERT_TRUE(synth::write_random_qwen35_model(o).ok());
    std::unique_ptr<format::GgufFile> file = testing::open_gguf_file(o.output_path);
    ASSERT_TRUE(file);
    auto fused = create_model(*file, kernels::best_kernels(), ModelOptions{.fusion = true});
    auto plain = create_model(*file, kernels::best_kernels(), ModelOptions{.fusion = false});
    ASSERT_TRUE(fused.ok() && plain.ok());
    for (int32_t chunk : {1, 5, kQwen35PromptLength}) {
      const std::vector<float> expected = logits(**plain, chunk);
      EXPECT_GT(*std::max_element(expected.begin(), expected.end()), 0.0f);
      EXPECT_EQ(logits(**fused, chunk), expected) << name << ", chunks of " << chunk;
    }
  }
}

TEST_F(Qwen35Test, FusionCutsTheDecodeStepsPoolJobs) {
  // A decode step unfused: per DeltaNet layer the QKV and Z projections are a job each (beta's and alpha's 4 rows
  // run inline), per attention layer Q with its gate, K and V; fused, each layer's input projections are one job.
  // Six DeltaNet and two attention layers: 6 + 2 * 2 jobs fewer, and every layer's FFN gate and up one job, not
  // two (gate_up_fused): 8 more.
  auto fused = create_model(*file_, kernels::best_kernels(), ModelOptions{.fusion = true});
  auto plain = create_model(*file_, kernels::best_kernels(), ModelOptions{.fusion = false});
  ASSERT_TRUE(fused.ok() && plain.ok());
  uint64_t fused_jobs = 0, plain_jobs = 0;
  logits(**fused, 1, 1, 0, &fused_jobs);
  logits(**plain, 1, 1, 0, &plain_jobs);
  EXPECT_GT(fused_jobs, 0u);
  EXPECT_EQ(plain_jobs - fused_jobs, 6u + 2u * 2u + 8u) << fused_jobs << " fused, " << plain_jobs << " unfused";
}

TEST_F(Qwen35Test, TheMoeFileHasExpertsAndAGatedSharedExpertBesideTheDeltaNetLayers) {
  std::optional<synth::ModelShape> shape = synth::find_model_shape("tiny-qwen35moe");
  ASSERT_TRUE(shape.has_value());
  std::unique_ptr<format::GgufFile> file = testing::write_random_qwen35_file(*shape, path("tiny-qwen35moe.gguf"));
  ASSERT_TRUE(file);
  auto c = model_config_from_gguf(*file);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->architecture, "qwen35moe");
  EXPECT_TRUE(c->is_delta_net());
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_used, 2);
  EXPECT_EQ(c->expert_hidden_dim, 64);
  EXPECT_TRUE(c->expert_weights_norm);
  EXPECT_EQ(c->shared_expert_hidden_dim, 96);
  EXPECT_TRUE(c->shared_expert_gated);
  auto m = create_model(*file, kernels::best_kernels(), {});
  ASSERT_TRUE(m.ok()) << m.error();
  const std::vector<float> whole = logits(**m, kQwen35PromptLength);
  EXPECT_LT(testing::max_abs_difference(logits(**m, 6), whole), 1e-5f) << "chunks of 6";
}

TEST_F(Qwen35Test, BadShapesAreRefusedByName) {
  // Three layers: all DeltaNet, no attention layer.
  synth::ModelShape cut = shape_;
  cut.num_layers = 3;
  synth::RandomModelOptions o{cut, format::GgmlType::kF32, 7, path("cut.gguf")};
  const Status written = synth::write_random_qwen35_model(o);
  ASSERT_FALSE(written.ok());
  EXPECT_NE(written.message().find("at least 4 layers"), std::string::npos) << written.message();
  // Value heads that are not a multiple of the key heads: a file edited to say 3.
  std::unique_ptr<format::GgufFile> edited = testing::open_gguf_file(
      testing::rewritten_gguf(*file_, path("edited.gguf"), [](const std::string& key, const format::GgufValue& value) {
        return key == "qwen35.ssm.time_step_rank" ? format::GgufValue::u32(3) : value;
      }));
  ASSERT_TRUE(edited);
  auto c = model_config_from_gguf(*edited);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("qwen35.ssm.time_step_rank 3 is not a multiple of qwen35.ssm.group_count 2"),
            std::string::npos)
      << c.error();
}

}  // namespace
}  // namespace pagoda
