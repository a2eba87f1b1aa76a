// Type-confused model configuration: the bundled GGUF with each hyper-parameter key set to every GGUF type (and
// absurd values), and an HF config.json with every field set to each JSON type. Each load ends in an error naming
// the file, or in a model whose sizes are within ModelConfigLimits and that runs a token; never an exception, an
// abort or a huge allocation. (Release tree only: the model library is not in the ASan+UBSan build, to keep CI
// time; the parsers it uses are, through format_tests and tokenizer_tests.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "model/hf_config.h"
#include "model/model_config.h"
#include "model/model_weights.h"
#include "support/gguf_mutations.h"
#include "support/json_mutations.h"

namespace pagoda {
namespace {

void expect_within_limits(const ModelConfig& c) {
  using L = ModelConfigLimits;
  EXPECT_GE(c.dim, 1);
  EXPECT_LE(c.dim, L::kMaxEmbeddingLength);
  EXPECT_LE(c.hidden_dim, L::kMaxFeedForwardLength);
  EXPECT_LE(c.num_layers, L::kMaxBlockCount);
  EXPECT_LE(c.num_heads, L::kMaxHeadCount);
  EXPECT_GE(c.num_kv_heads, 1);
  EXPECT_LE(c.num_kv_heads, c.num_heads);
  EXPECT_LE(c.head_dim, L::kMaxHeadDim);
  EXPECT_LE(c.vocab_size, L::kMaxVocabSize);
  EXPECT_LE(c.context_length, L::kMaxContextLength);
}

TEST(ModelConfigFuzzTest, TypeSwappedGgufHyperParameters) {
  auto bundled = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(bundled.ok()) << bundled.error();
  std::vector<format::GgufValue> values = testing_support::type_swapped_gguf_values();
  for (uint32_t absurd : {uint32_t(1) << 24, uint32_t(1) << 30, uint32_t(INT32_MAX), uint32_t(65537)})
    values.push_back(format::GgufValue::u32(absurd));
  int num_loaded = 0;
  for (const char* key : {"general.architecture", "general.name", "llama.embedding_length", "llama.feed_forward_length",
                          "llama.block_count", "llama.attention.head_count", "llama.attention.head_count_kv",
                          "llama.context_length", "llama.attention.layer_norm_rms_epsilon", "llama.rope.freq_base",
                          "llama.attention.key_length", "llama.rope.dimension_count"}) {
    for (const format::GgufValue& value : values) {
      SCOPED_TRACE(std::string(key) + " as " + std::string(format::gguf_value_type_name(value.type)));
      const std::vector<uint8_t> bytes = testing_support::with_metadata(*bundled, key, value);
      auto file = format::GgufFile::from_memory(bytes, "typed.gguf");
      ASSERT_TRUE(file.ok()) << file.error();
      // The loader's two steps without building the model (its repacking is most of create_model's time).
      Result<ModelConfig> config = model_config_from_gguf(*file);
      if (!config.ok()) {
        EXPECT_EQ(config.error().rfind("typed.gguf: ", 0), 0u) << config.error();
        continue;
      }
      expect_within_limits(*config);
      Result<ModelWeights> weights = model_weights_from_gguf(*file, *config);
      if (!weights.ok()) {
        EXPECT_EQ(weights.error().rfind("typed.gguf: ", 0), 0u) << weights.error();
        continue;
      }
      ++num_loaded;
      EXPECT_EQ(weights->layers.size(), size_t(config->num_layers));
    }
  }
  EXPECT_GT(num_loaded, 0);  // e.g. general.name of any string, a context length of 1
}

std::string llama_config_json() {
  return R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300,
    "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "head_dim": 16,
    "tie_word_embeddings": false, "attention_bias": false, "bos_token_id": 1, "eos_token_id": [2, 3],
    "sliding_window": null, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})";
}

TEST(ModelConfigFuzzTest, TypeConfusedHfConfigJson) {
  const nlohmann::json base = nlohmann::json::parse(llama_config_json());
  ASSERT_TRUE(parse_hf_config(base.dump(), "cfg.json").ok());
  int num_ok = 0;
  testing_support::for_each_type_confusion<nlohmann::json>(
      base, [&](const nlohmann::json& variant, const std::string& where) {
        SCOPED_TRACE(where);
        const std::string text = variant.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        Result<HfConfig> h = parse_hf_config(text, "cfg.json");
        if (!h.ok()) {
          EXPECT_EQ(h.error().rfind("cfg.json: ", 0), 0u) << h.error();
          EXPECT_EQ(h.error().find('\n'), std::string::npos) << h.error();
          return;
        }
        ++num_ok;
        expect_within_limits(h->config);
        EXPECT_EQ(h->config.rope_freq_factors.size(),
                  h->rope_scaling_factor > 0 ? size_t(h->config.rope_dim / 2) : size_t(0));
      });
  EXPECT_GT(num_ok, 0);
}

}  // namespace
}  // namespace pagoda
