// The serving benchmark's inputs: random prompts (lengths, ids vs text), the JSONL and ShareGPT loaders against
// small hand-written files and broken, truncated or mangled ones (errors name the file, line and field), the SSE
// data splitter fed in odd pieces, --base-url parsing and the request body.
#include "bench/serve_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/serve_client.h"
#include "bench/sse_data_reader.h"
#include "format/gguf_reader.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::bench {
namespace {

class ServeDatasetTest : public testing::Test {
 protected:
  void SetUp() override {
    Result<format::GgufFile> f = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
    ASSERT_TRUE(f.ok()) << f.error();
    file_ = std::make_unique<format::GgufFile>(std::move(*f));
    Result<std::unique_ptr<Tokenizer>> t = tokenizer_from_gguf(*file_);
    ASSERT_TRUE(t.ok()) << t.error();
    tokenizer_ = std::move(*t);
    dir_ = std::filesystem::temp_directory_path() / ("pagoda_serve_dataset_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  std::unique_ptr<format::GgufFile> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::filesystem::path dir_;
};

TEST_F(ServeDatasetTest, RandomIdsHaveTheDrawnLengths) {
  RandomPromptOptions o{.num_prompts = 50, .input_len = 40, .output_len = 20, .range_ratio = 0.25, .seed = 3};
  Result<std::vector<ServePrompt>> prompts = random_serve_prompts(*tokenizer_, o);
  ASSERT_TRUE(prompts.ok()) << prompts.error();
  ASSERT_EQ(prompts->size(), 50u);
  bool lengths_vary = false;
  for (const ServePrompt& p : *prompts) {
    EXPECT_TRUE(p.text.empty());
    EXPECT_EQ(int32_t(p.token_ids.size()), p.prompt_len);
    EXPECT_EQ(p.token_ids[0], tokenizer_->bos_id());
    EXPECT_GE(p.prompt_len, 30);
    EXPECT_LE(p.prompt_len, 50);
    EXPECT_GE(p.output_len, 15);
    EXPECT_LE(p.output_len, 25);
    lengths_vary |= p.prompt_len != (*prompts)[0].prompt_len;
  }
  EXPECT_TRUE(lengths_vary);
  EXPECT_NE((*prompts)[0].token_ids[1], (*prompts)[1].token_ids[1]);  // cold: no shared prefix
}

TEST_F(ServeDatasetTest, RandomTextReencodesNearItsLength) {
  RandomPromptOptions o{.num_prompts = 20, .input_len = 64, .output_len = 8, .as_text = true, .seed = 5};
  Result<std::vector<ServePrompt>> prompts = random_serve_prompts(*tokenizer_, o);
  ASSERT_TRUE(prompts.ok()) << prompts.error();
  for (const ServePrompt& p : *prompts) {
    EXPECT_FALSE(p.text.empty());
    EXPECT_EQ(p.prompt_len, int32_t(tokenizer_->encode(p.text, true).size()));
    EXPECT_NEAR(p.prompt_len, 64, 6);
    EXPECT_NO_THROW((void)nlohmann::json(p.text).dump()) << "not valid UTF-8";
    EXPECT_EQ(p.output_len, 8);
  }
}

TEST_F(ServeDatasetTest, RandomRejectsBadLengths) {
  EXPECT_FALSE(random_serve_prompts(*tokenizer_, {.num_prompts = 1, .input_len = 1, .output_len = 4}).ok());
  EXPECT_FALSE(random_serve_prompts(*tokenizer_, {.num_prompts = 1, .input_len = 8, .output_len = 0}).ok());
  Result<std::vector<ServePrompt>> r =
      random_serve_prompts(*tokenizer_, {.num_prompts = 1, .input_len = 8, .output_len = 4, .range_ratio = 1.0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("--range-ratio"), std::string::npos);
}

TEST_F(ServeDatasetTest, JsonlTextAndIdPromptsCycledToTheCount) {
  const std::string path = write("d.jsonl",
                                 "{\"prompt\": \"Once upon a time\", \"output_len\": 7}\n\n"
                                 "{\"prompt\": [1, 403, 407], \"output_len\": 3}\r\n");
  Result<std::vector<ServePrompt>> p = load_jsonl_prompts(path, *tokenizer_, 3, std::nullopt);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].text, "Once upon a time");
  EXPECT_EQ((*p)[0].prompt_len, int32_t(tokenizer_->encode("Once upon a time", true).size()));
  EXPECT_EQ((*p)[0].output_len, 7);
  EXPECT_EQ((*p)[1].token_ids, (std::vector<TokenId>{1, 403, 407}));
  EXPECT_EQ((*p)[1].prompt_len, 3);
  EXPECT_EQ((*p)[1].output_len, 3);
  EXPECT_EQ((*p)[2].text, "Once upon a time");
  Result<std::vector<ServePrompt>> overridden = load_jsonl_prompts(path, *tokenizer_, 2, 11);
  ASSERT_TRUE(overridden.ok());
  EXPECT_EQ((*overridden)[1].output_len, 11);
}

TEST_F(ServeDatasetTest, JsonlErrorsNameTheLineAndField) {
  struct Case {
    std::string bytes, expected;
  };
  for (const Case& c :
       {Case{"{\"prompt\": \"a\", \"output_len\": 2}\n{\"prompt\": \"b\"\n", ":2: invalid JSON"},
        Case{"{\"output_len\": 2}\n", ":1: 'prompt' is missing"},
        Case{"{\"prompt\": 5, \"output_len\": 2}\n", ":1: 'prompt' must be"},
        Case{"{\"prompt\": [1, 99999], \"output_len\": 2}\n", ":1: 'prompt' ids must be"},
        Case{"{\"prompt\": \"a\"}\n", ":1: 'output_len' is missing"},
        Case{"{\"prompt\": \"a\", \"output_len\": -3}\n", ":1: 'output_len' must be"},
        Case{"[1, 2]\n", ":1: expected a JSON object"}, Case{"\n\n", "no prompts"},
        Case{"{\"prompt\": \"a\", \"output_len\": 2}\n{\"prompt\": \"b\", \"outp", ":2: invalid JSON"}}) {
    SCOPED_TRACE(c.bytes);
    const std::string path = write("bad.jsonl", c.bytes);
    Result<std::vector<ServePrompt>> p = load_jsonl_prompts(path, *tokenizer_, 4, std::nullopt);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().find(path), std::string::npos) << p.error();
    EXPECT_NE(p.error().find(c.expected), std::string::npos) << p.error();
  }
  Result<std::vector<ServePrompt>> missing = load_jsonl_prompts((dir_ / "none.jsonl").string(), *tokenizer_, 1, 4);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("cannot open"), std::string::npos);
}

TEST_F(ServeDatasetTest, ShareGptFirstHumanTurnAndItsReply) {
  const std::string reply = "The little dog ran to the park and played with a big red ball all day long.";
  const std::string path = write("sg.json", R"([
    {"id": "a", "conversations": [{"from": "system", "value": "be kind"},
                                   {"from": "human", "value": "Tell me a story about a dog and a ball."},
                                   {"from": "gpt", "value": ")" +
                                                reply + R"("},
                                   {"from": "human", "value": "more"}]},
    {"id": "short", "conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello there friend"}]},
    {"id": "no reply", "conversations": [{"from": "human", "value": "Is anyone there at all today?"}]}
  ])");
  Result<std::vector<ServePrompt>> p = load_sharegpt_prompts(path, *tokenizer_, 2, std::nullopt, 0);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_EQ(p->size(), 2u);  // only the first entry is usable ("Hi" is under 4 tokens); cycled
  EXPECT_EQ((*p)[0].text, "Tell me a story about a dog and a ball.");
  EXPECT_EQ((*p)[0].output_len, int32_t(tokenizer_->encode(reply, false).size()));
  EXPECT_EQ((*p)[1].text, (*p)[0].text);
  Result<std::vector<ServePrompt>> fixed = load_sharegpt_prompts(path, *tokenizer_, 1, 32, 0);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ((*fixed)[0].output_len, 32);
}

TEST_F(ServeDatasetTest, ShareGptBadFiles) {
  struct Case {
    std::string bytes, expected;
  };
  for (const Case& c : {Case{"[{\"conversations\": [", "invalid JSON"}, Case{"{}", "expected a ShareGPT JSON array"},
                        Case{"[{\"id\": 1}]", "entry 0: 'conversations' is missing"},
                        Case{"[{\"conversations\": [{\"from\": \"human\"}]}]", "entry 0: each turn needs"},
                        Case{"[]", "no usable conversations"}}) {
    SCOPED_TRACE(c.bytes);
    const std::string path = write("bad.json", c.bytes);
    Result<std::vector<ServePrompt>> p = load_sharegpt_prompts(path, *tokenizer_, 1, std::nullopt, 0);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.error().find(path), std::string::npos) << p.error();
    EXPECT_NE(p.error().find(c.expected), std::string::npos) << p.error();
  }
}

TEST_F(ServeDatasetTest, TruncatedAndMangledFilesNeverCrash) {
  const std::string jsonl =
      "{\"prompt\": \"Once upon a time\", \"output_len\": 7}\n{\"prompt\": [1, 403], \"output_len\": 3}\n";
  const std::string sharegpt =
      "[{\"conversations\": [{\"from\": \"human\", \"value\": \"Tell me about the big red ball\"}, "
      "{\"from\": \"gpt\", \"value\": \"It rolled down the hill and far away\"}]}]";
  std::mt19937_64 rng(11);
  for (size_t cut = 0; cut <= sharegpt.size(); ++cut) {
    std::string mangled = sharegpt;
    if (!mangled.empty()) mangled[rng() % mangled.size()] = char(rng() % 256);
    for (const std::string& bytes : {sharegpt.substr(0, cut), mangled}) {
      const std::string path = write("f.json", bytes);
      Result<std::vector<ServePrompt>> p = load_sharegpt_prompts(path, *tokenizer_, 2, std::nullopt, 0);
      if (!p.ok()) {
        EXPECT_NE(p.error().find(path), std::string::npos) << p.error();
      }
    }
  }
  for (size_t cut = 0; cut <= jsonl.size(); ++cut) {
    std::string mangled = jsonl;
    mangled[rng() % mangled.size()] = char(rng() % 256);
    for (const std::string& bytes : {jsonl.substr(0, cut), mangled}) {
      const std::string path = write("f.jsonl", bytes);
      Result<std::vector<ServePrompt>> p = load_jsonl_prompts(path, *tokenizer_, 2, std::nullopt);
      if (!p.ok()) {
        EXPECT_NE(p.error().find(path), std::string::npos) << p.error();
      }
    }
  }
}

TEST(SseDataReader, PayloadsOfDataLinesFedInPieces) {
  const std::string stream = ": comment\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata:{\"b\":2}\n\ndata: [DONE]\n\n";
  for (size_t piece : {size_t(1), size_t(3), size_t(7), stream.size()}) {
    SCOPED_TRACE(piece);
    SseDataReader reader;
    std::vector<std::string> got;
    for (size_t at = 0; at < stream.size(); at += piece)
      for (std::string& p : reader.feed(std::string_view(stream).substr(at, piece))) got.push_back(std::move(p));
    EXPECT_EQ(got, (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}", "[DONE]"}));
  }
  SseDataReader unfinished;
  EXPECT_TRUE(unfinished.feed("data: half").empty());
}

TEST(ServeClient, ParsesBaseUrls) {
  Result<ServeTarget> t = parse_base_url("http://127.0.0.1:8080");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "127.0.0.1");
  EXPECT_EQ(t->port, "8080");
  EXPECT_EQ(t->path_prefix, "");
  t = parse_base_url("http://example.org/api/");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->port, "80");
  EXPECT_EQ(t->path_prefix, "/api");
  t = parse_base_url("http://[::1]:9000");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->host, "::1");
  for (const char* bad : {"https://x:1", "127.0.0.1:8080", "http://:80", "http://h:0", "http://h:99999", "http://h:8a"})
    EXPECT_FALSE(parse_base_url(bad).ok()) << bad;
}

TEST(ServeClient, StreamedRequestBodies) {
  ServeClientOptions o;
  ServePrompt ids;
  ids.token_ids = {1, 5, 9};
  ids.prompt_len = 3;
  ids.output_len = 16;
  const std::string body = serve_request_body(o, ids);
  for (const char* part :
       {"\"prompt\":[1,5,9]", "\"max_tokens\":16", "\"stream\":true", "\"include_usage\":true", "\"ignore_eos\":true"})
    EXPECT_NE(body.find(part), std::string::npos) << body;
  EXPECT_EQ(body.find("\"model\""), std::string::npos);
  o.endpoint = "/v1/chat/completions";
  o.model = "m";
  ServePrompt text;
  text.text = "hi";
  text.output_len = 4;
  const std::string chat = serve_request_body(o, text);
  EXPECT_NE(chat.find("\"messages\":[{\"content\":\"hi\",\"role\":\"user\"}]"), std::string::npos) << chat;
  EXPECT_NE(chat.find("\"model\":\"m\""), std::string::npos) << chat;
}

}  // namespace
}  // namespace pagoda::bench
