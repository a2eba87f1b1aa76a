// Tests for PagodaConfig parsing, validation, printing and the report of settings a one-sequence subcommand does not use (src/core/config.h).
#include "core/config.h"
#include "support/temp_dir_test.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

namespace pagoda {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr const char* kExample = R"({"model": "path", "quantization":"q4_0","max_seq_len":4096,"batch_size":"auto",
  "threads": 8,"kv_cache":{"max_entries":512,"block_size":16,"dtype":"int8"},
  "parallel":{"tensor_parallel":1,"pipeline_parallel":1},"slo":{"ttft_ms":1500,"tpot_ms":80.5}})";

void expect_same(const PagodaConfig& a, const PagodaConfig& b) {
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.quantization, b.quantization);
  EXPECT_EQ(a.max_seq_len, b.max_seq_len);
  EXPECT_EQ(a.batch_size, b.batch_size);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.kv_cache.max_entries, b.kv_cache.max_entries);
  EXPECT_EQ(a.kv_cache.block_size, b.kv_cache.block_size);
  EXPECT_EQ(a.kv_cache.dtype, b.kv_cache.dtype);
  EXPECT_EQ(a.parallel.tensor_parallel, b.parallel.tensor_parallel);
  EXPECT_EQ(a.parallel.pipeline_parallel, b.parallel.pipeline_parallel);
  EXPECT_EQ(a.slo.ttft_ms, b.slo.ttft_ms);
  EXPECT_EQ(a.slo.tpot_ms, b.slo.tpot_ms);
}

std::string parse_error(std::string_view text) {
  Result<PagodaConfig> config = parse_config(text, "cfg.json");
  EXPECT_FALSE(config.ok()) << "parsed: " << text;
  return config.ok() ? std::string() : config.error();
}

TEST(ConfigTest, ExampleParsesToTheRightStruct) {
  Result<PagodaConfig> config = parse_config(kExample, "cfg.json");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->model, "path");
  EXPECT_EQ(config->quantization, "q4_0");
  EXPECT_EQ(config->max_seq_len, 4096);
  EXPECT_EQ(config->batch_size, std::nullopt);
  EXPECT_EQ(config->threads, 8);
  EXPECT_EQ(config->kv_cache.max_entries, 512);
  EXPECT_EQ(config->kv_cache.block_size, 16);
  EXPECT_EQ(config->kv_cache.dtype, "int8");
  EXPECT_EQ(config->parallel.tensor_parallel, 1);
  EXPECT_EQ(config->parallel.pipeline_parallel, 1);
  EXPECT_EQ(config->slo.ttft_ms, 1500.0);
  EXPECT_EQ(config->slo.tpot_ms, 80.5);
}

TEST(ConfigTest, SloTargetsAreMillisecondsOrZero) {
  EXPECT_EQ(parse_error(R"({"slo": {"tpot_ms": -1}})"), "cfg.json: slo.tpot_ms: must be milliseconds in [0, 1e+07] (0 = none), got -1");
  EXPECT_THAT(parse_error(R"({"slo": {"ttft_ms": "fast"}})"), HasSubstr("slo.ttft_ms: expected a number, got a string"));
  EXPECT_THAT(parse_error(R"({"slo": {"p99": 5}})"), HasSubstr("slo.p99: unknown key"));
  EXPECT_THAT(parse_error(R"({"slo": 5})"), HasSubstr("slo: expected an object"));
  PagodaConfig config;
  config.slo.ttft_ms = 2e7;
  EXPECT_THAT(validate_config(config).message(), HasSubstr("slo.ttft_ms"));
}

TEST(ConfigTest, EmptyObjectGivesDefaults) {
  Result<PagodaConfig> config = parse_config("{}", "cfg.json");
  ASSERT_TRUE(config.ok()) << config.error();
  expect_same(*config, PagodaConfig{});
  EXPECT_TRUE(validate_config(*config).ok());
  EXPECT_TRUE(unused_by_single_sequence(*config, "run").empty());
}

TEST(ConfigTest, IntegerBatchSizeAndIntegralFloat) {
  Result<PagodaConfig> config = parse_config(R"({"batch_size": 32, "max_seq_len": 4096.0})", "cfg.json");
  ASSERT_TRUE(config.ok()) << config.error();
  EXPECT_EQ(config->batch_size, 32);
  EXPECT_EQ(config->max_seq_len, 4096);
}

TEST(ConfigTest, InvalidJsonNamesLineAndColumn) {
  std::string error = parse_error("{\n  \"threads\": 4,\n  \"model\" \"x\"\n}");
  EXPECT_THAT(error, StartsWith("cfg.json: invalid JSON at line 3, column "));
  EXPECT_THAT(error, Not(HasSubstr("json.exception")));
  EXPECT_THAT(parse_error(""), StartsWith("cfg.json: invalid JSON at line 1, column "));
  EXPECT_THAT(parse_error("{} trailing"), StartsWith("cfg.json: invalid JSON at line 1"));
}

TEST(ConfigTest, TopLevelMustBeAnObject) {
  EXPECT_THAT(parse_error("[1, 2]"), AllOf(StartsWith("cfg.json: "), HasSubstr("object"), HasSubstr("an array")));
  EXPECT_THAT(parse_error("4096"), HasSubstr("an integer"));
  EXPECT_THAT(parse_error("null"), HasSubstr("null"));
}

TEST(ConfigTest, UnknownKeyNamesFullPathAndAllowedKeys) {
  std::string error = parse_error(R"({"kv_cache": {"pagesize": 16}})");
  EXPECT_THAT(error, StartsWith("cfg.json: kv_cache.pagesize: unknown key"));
  EXPECT_THAT(error, HasSubstr("max_entries, block_size, dtype, type_k, type_v"));

  error = parse_error(R"({"treads": 4})");
  EXPECT_THAT(error, StartsWith("cfg.json: treads: unknown key"));
  EXPECT_THAT(error, HasSubstr("model, quantization, max_seq_len, batch_size, threads, kv_cache, parallel, slo"));

  error = parse_error(R"({"parallel": {"tp": 2}})");
  EXPECT_THAT(error, AllOf(HasSubstr("parallel.tp"), HasSubstr("tensor_parallel, pipeline_parallel")));
}

TEST(ConfigTest, UnknownKeyWithControlCharactersIsQuoted) {
  std::string error = parse_error(R"({"a\nb": 1})");
  EXPECT_THAT(error, HasSubstr(R"("a\nb": unknown key)"));
}

TEST(ConfigTest, WrongTypeNamesKeyAndTypes) {
  EXPECT_EQ(parse_error(R"({"kv_cache": {"block_size": "big"}})"),
            "cfg.json: kv_cache.block_size: expected an integer, got a string");
  EXPECT_THAT(parse_error(R"({"model": 3})"), HasSubstr("model: expected a string, got an integer"));
  EXPECT_THAT(parse_error(R"({"threads": true})"), HasSubstr("threads: expected an integer, got a boolean"));
  EXPECT_THAT(parse_error(R"({"threads": null})"), HasSubstr("threads: expected an integer, got null"));
  EXPECT_THAT(parse_error(R"({"max_seq_len": 1.5})"), HasSubstr("max_seq_len: expected an integer, got 1.5"));
  EXPECT_THAT(parse_error(R"({"kv_cache": []})"), HasSubstr("kv_cache: expected an object, got an array"));
  EXPECT_THAT(parse_error(R"({"parallel": 2})"), HasSubstr("parallel: expected an object, got an integer"));
  EXPECT_THAT(parse_error(R"({"batch_size": [1]})"),
              HasSubstr("batch_size: expected \"auto\" or an integer, got an array"));
  EXPECT_THAT(parse_error(R"({"quantization": 4})"), HasSubstr("quantization: expected a string"));
}

TEST(ConfigTest, OutOfRangeNamesKeyRangeAndValue) {
  EXPECT_EQ(parse_error(R"({"kv_cache": {"block_size": 24}})"),
            "cfg.json: kv_cache.block_size: must be a power of two in [1, 1024], got 24");
  EXPECT_THAT(parse_error(R"({"kv_cache": {"block_size": 2048}})"), HasSubstr("got 2048"));
  EXPECT_THAT(parse_error(R"({"kv_cache": {"block_size": 0}})"), HasSubstr("kv_cache.block_size"));
  EXPECT_THAT(parse_error(R"({"max_seq_len": -1})"),
              HasSubstr("max_seq_len: must be an integer in [0, 1048576], got -1"));
  // Values past int64 are printed as written, not as a saturated stand-in.
  EXPECT_THAT(parse_error(R"({"threads": 18446744073709551615})"),
              HasSubstr("threads: must be an integer in [0, 1024], got 18446744073709551615"));
  EXPECT_THAT(parse_error(R"({"threads": 1e300})"), HasSubstr("threads: must be an integer in [0, 1024], got 1e+300"));
  EXPECT_THAT(parse_error(R"({"threads": 2048.0})"), HasSubstr("threads: must be an integer in [0, 1024], got 2048.0"));
  EXPECT_THAT(parse_error(R"({"batch_size": 0})"), HasSubstr("batch_size: must be an integer in [1, 4096], got 0"));
  EXPECT_THAT(parse_error(R"({"batch_size": "many"})"),
              HasSubstr(R"(batch_size: must be "auto" or an integer in [1, 4096], got "many")"));
  EXPECT_THAT(parse_error(R"({"parallel": {"pipeline_parallel": 65}})"),
              HasSubstr("parallel.pipeline_parallel: must be an integer in [1, 64], got 65"));
  EXPECT_THAT(parse_error(R"({"kv_cache": {"max_entries": -5}})"), HasSubstr("kv_cache.max_entries"));
}

TEST(ConfigTest, EnumValuesListAllowedAndValue) {
  EXPECT_EQ(parse_error(R"({"quantization": "q5_k"})"),
            "cfg.json: quantization: must be one of none, q8_0, q4_0, int8, awq-int4; got \"q5_k\"");
  EXPECT_THAT(parse_error(R"({"kv_cache": {"dtype": "fp8"}})"),
              HasSubstr("kv_cache.dtype: must be one of f32, f16, bf16, q8_0, q4_0, int8; got \"fp8\""));
  EXPECT_THAT(parse_error(R"({"kv_cache": {"type_k": "q4_1"}})"),
              HasSubstr("kv_cache.type_k: must be one of f32, f16, bf16, q8_0, q4_0, int8; got \"q4_1\""));
}

TEST(ConfigTest, ValidateConfigRechecksStruct) {
  PagodaConfig config;
  EXPECT_TRUE(validate_config(config).ok());
  config.kv_cache.block_size = 3;
  EXPECT_EQ(validate_config(config).message(), "kv_cache.block_size: must be a power of two in [1, 1024], got 3");
  config = {};
  config.batch_size = 5000;
  EXPECT_THAT(validate_config(config).message(), HasSubstr("batch_size"));
  config = {};
  config.threads = -1;
  EXPECT_THAT(validate_config(config).message(), HasSubstr("threads"));
  config = {};
  config.quantization = "q3";
  EXPECT_THAT(validate_config(config).message(), HasSubstr("quantization"));
  config = {};
  config.kv_cache.dtype = "int4";
  EXPECT_THAT(validate_config(config).message(), HasSubstr("kv_cache.dtype"));
  config = {};
  config.parallel.tensor_parallel = 0;
  EXPECT_THAT(validate_config(config).message(), HasSubstr("parallel.tensor_parallel"));
  config = {};
  config.max_seq_len = 2000000;
  EXPECT_THAT(validate_config(config).message(), HasSubstr("max_seq_len"));
}

TEST(ConfigTest, RoundTripThroughJson) {
  PagodaConfig config;
  config.model = "models/llama \"7b\".gguf";
  config.quantization = "awq-int4";
  config.max_seq_len = 2048;
  config.batch_size = 64;
  config.threads = 12;
  config.kv_cache = {1024, 32, "int8", "", ""};
  config.parallel = {2, 4};
  Result<PagodaConfig> parsed = parse_config(config_to_json(config), "printed");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  expect_same(*parsed, config);

  Result<PagodaConfig> defaults = parse_config(config_to_json(PagodaConfig{}), "printed");
  ASSERT_TRUE(defaults.ok()) << defaults.error();
  expect_same(*defaults, PagodaConfig{});
}

TEST(ConfigTest, PrintedJsonIsPrettyAndInFileOrder) {
  EXPECT_EQ(config_to_json(PagodaConfig{}), R"({
  "model": "",
  "quantization": "none",
  "max_seq_len": 0,
  "batch_size": "auto",
  "threads": 0,
  "kv_cache": {
    "max_entries": 0,
    "block_size": 16,
    "dtype": "f16"
  },
  "parallel": {
    "tensor_parallel": 1,
    "pipeline_parallel": 1
  },
  "slo": {
    "ttft_ms": 0.0,
    "tpot_ms": 0.0
  }
})");
}

TEST(ConfigTest, UnusedBySingleSequenceListsEachOne) {
  PagodaConfig config;
  EXPECT_TRUE(unused_by_single_sequence(config, "run").empty());
  config.quantization = "q4_0";       // acts: the loader quantizes
  config.kv_cache = {512, 32, "int8", "", ""};  // block_size and dtype act in run too
  config.batch_size = 8;
  config.parallel = {2, 3};
  EXPECT_THAT(unused_by_single_sequence(config, "run"),
              ::testing::ElementsAre("batch_size = 8: run runs one sequence at a time; not used",
                                     "kv_cache.max_entries = 512: run runs one sequence at a time; not used"));
}

TEST(ConfigTest, LoadConfigFile) {
  Result<PagodaConfig> missing = load_config_file("/nonexistent/pagoda/config.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error(), "cannot read config /nonexistent/pagoda/config.json: No such file or directory");

  Result<PagodaConfig> directory = load_config_file("/");
  ASSERT_FALSE(directory.ok());
  EXPECT_THAT(directory.error(), StartsWith("cannot read config /: "));

  const std::string path = testing_support::process_temp_path("pagoda_config_test.json");
  {
    std::ofstream out(path);
    out << kExample;
  }
  Result<PagodaConfig> loaded = load_config_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->kv_cache.max_entries, 512);
  {
    std::ofstream out(path);
    out << R"({"threads": "four"})";
  }
  Result<PagodaConfig> bad = load_config_file(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), path + ": threads: expected an integer, got a string");
  std::remove(path.c_str());
}

TEST(ConfigTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep = R"({"kv_cache": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_THAT(parse_error(deep), HasSubstr("nested deeper"));
  EXPECT_THAT(parse_error(std::string(100000, '[')), StartsWith("cfg.json: invalid JSON"));
}

// Random bytes, truncations and single-byte mutations of a valid config: each is either a config or an
// error, never a crash (the sanitizer build checks for UB too).
TEST(ConfigTest, FuzzNeverCrashes) {
  std::mt19937_64 rng(1234);
  const std::string valid = kExample;
  int num_ok = 0;
  for (size_t len = 0; len <= valid.size(); ++len) {
    Result<PagodaConfig> r = parse_config(valid.substr(0, len), "fuzz");
    num_ok += r.ok();
    if (!r.ok()) {
      EXPECT_THAT(r.error(), StartsWith("fuzz: "));
    }
  }
  EXPECT_EQ(num_ok, 1);  // only the whole text
  const std::string alphabet = "{}[]\":,0123456789.-+eE \n\tautonlfrsq_\\";
  for (int i = 0; i < 3000; ++i) {
    std::string text = valid;
    const int num_mutations = 1 + int(rng() % 4);
    for (int m = 0; m < num_mutations; ++m) {
      const size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: text.erase(pos, 1); break;
        default: text.insert(pos, 1, char(rng() & 0xff)); break;
      }
    }
    Result<PagodaConfig> r = parse_config(text, "fuzz");
    if (r.ok()) {
      EXPECT_TRUE(validate_config(*r).ok()) << text;
    }
  }
  for (int i = 0; i < 3000; ++i) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) c = (rng() % 2) ? alphabet[rng() % alphabet.size()] : char(rng() & 0xff);
    Result<PagodaConfig> r = parse_config(text, "fuzz");
    if (r.ok()) {
      EXPECT_TRUE(validate_config(*r).ok()) << text;
    }
  }
}

}  // namespace
}  // namespace pagoda
