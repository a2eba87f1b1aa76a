// Tests for GrammarMatcher (src/grammar/grammar_matcher.h) and the per-state token masks behind it: every mask
// equals a brute-force check (each token's bytes tried on a copy of the matcher) on random states of several
// grammars (ambiguous ones with many stacks included) and vocabularies (the bundled model's, random ones with
// duplicate, control and stop tokens, random ones of well-formed and malformed UTF-8); EOS exactly when the grammar can end; rollback; copies; frame collection.
#include "grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "format/gguf_reader.h"
#include "grammar/gbnf_parser.h"
#include "grammar_test_util.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::grammar {
namespace {

constexpr const char* kJsonGbnf = R"gbnf(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

// Ambiguous on purpose: several stacks live at once, nullable calls, right recursion, a rule called from
// several places (uncertain tokens at its end).
constexpr const char* kAmbiguousGbnf = R"gbnf(
root ::= (a | b | c)+ end?
a ::= "x" a | "x" | e "xy"
b ::= "x"* "y" | item item
c ::= "[" root? "]"
e ::= "" | "e"
item ::= [a-z] | "xy"
end ::= "!"
)gbnf";

constexpr const char* kUnicodeGbnf = R"gbnf(
root ::= (word " ")* word "."
word ::= [a-zé€😀]+ | "ß"
)gbnf";

std::shared_ptr<const TokenVocabulary> random_vocab(uint64_t seed, const std::string& alphabet, int32_t num_tokens) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> bytes;
  for (const char c : alphabet) bytes.push_back(std::string(1, c));
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int32_t> len(1, 6);
  while (int32_t(bytes.size()) < num_tokens) {
    std::string t;
    for (int32_t i = len(rng); i > 0; --i) t += alphabet[pick(rng)];
    bytes.push_back(t);
  }
  bytes.push_back(bytes[3]);  // a duplicate of another token's bytes
  bytes.push_back("");        // a control token
  bytes.push_back("");        // the stop token
  std::vector<TokenId> stops{TokenId(bytes.size() - 1)};
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(stops));
}

// Tokens made of 1 to 4 random pieces: whole characters, ASCII, and bytes that break UTF-8 (lone lead and
// continuation bytes, a surrogate, an overlong, bytes never in UTF-8), so that some trie subtrees are well-formed
// text and others are not.
std::shared_ptr<const TokenVocabulary> random_piece_vocab(uint64_t seed, const std::vector<std::string>& pieces,
                                                          int32_t num_tokens) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> bytes(pieces);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int32_t> len(1, 4);
  while (int32_t(bytes.size()) < num_tokens) {
    std::string t;
    for (int32_t i = len(rng); i > 0; --i) t += pieces[pick(rng)];
    bytes.push_back(t);
  }
  bytes.push_back("");  // the stop token
  std::vector<TokenId> stops{TokenId(bytes.size() - 1)};
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(stops));
}

const std::vector<std::string> kUtf8Pieces = {
    "a", "b", "z", " ", "\"", "\\", ":", ",", "{", "}", "\n", "\x01", "u", "0", "7", "é", "€", "😀", "ß", "\xC3",
    "\xA9", "\xE2\x82", "\xF0\x9F", "\x98\x80", "\xED\xA0\x80", "\xC0\xAF", "\xFF", "\xF5", "\x7F", "ab", "ba"};

std::vector<uint32_t> brute_force_mask(const GrammarMatcher& m, const TokenVocabulary& vocab) {
  std::vector<uint32_t> mask(vocab.mask_words(), 0);
  for (TokenId id = 0; id < vocab.vocab_size(); ++id) {
    GrammarMatcher copy(m);
    if (copy.accept_token(id)) mask[size_t(id) >> 5] |= 1u << (id & 31);
  }
  return mask;
}

std::vector<TokenId> allowed_ids(const std::vector<uint32_t>& mask, int32_t vocab_size) {
  std::vector<TokenId> ids;
  for (TokenId id = 0; id < vocab_size; ++id) {
    if (mask[size_t(id) >> 5] & (1u << (id & 31))) ids.push_back(id);
  }
  return ids;
}

// Random walks choosing only allowed tokens; at every step the mask must equal the brute-force mask and the stop
// token must be allowed exactly when can_end(). Returns the number of states checked.
int32_t check_random_walks(const std::shared_ptr<const CompiledGrammar>& g, uint64_t seed, int32_t num_walks,
                           int32_t max_steps) {
  const TokenVocabulary& vocab = g->vocabulary();
  std::mt19937_64 rng(seed);
  int32_t checked = 0;
  for (int32_t w = 0; w < num_walks; ++w) {
    GrammarMatcher m(g);
    std::string text;
    for (int32_t step = 0; step < max_steps; ++step) {
      std::vector<uint32_t> mask(vocab.mask_words(), 0xFFFFFFFFu);
      m.fill_mask(mask);
      const std::vector<uint32_t> expected = brute_force_mask(m, vocab);
      for (TokenId id = 0; id < vocab.vocab_size(); ++id) {
        const bool got = mask[size_t(id) >> 5] & (1u << (id & 31));
        const bool want = expected[size_t(id) >> 5] & (1u << (id & 31));
        EXPECT_EQ(got, want) << "walk " << w << " step " << step << " token " << id << " '" << vocab.token_bytes(id)
                             << "' after " << ::testing::PrintToString(text);
      }
      for (const TokenId stop : vocab.stop_ids()) {
        EXPECT_EQ(bool(mask[size_t(stop) >> 5] & (1u << (stop & 31))), m.can_end());
      }
      ++checked;
      std::vector<TokenId> ids = allowed_ids(mask, vocab.vocab_size());
      if (ids.empty() || ::testing::Test::HasFailure()) break;
      const TokenId next = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
      EXPECT_TRUE(m.accept_token(next));
      text += vocab.token_bytes(next);
      if (m.is_complete()) break;
    }
  }
  return checked;
}

std::shared_ptr<const CompiledGrammar> compile(const char* gbnf, std::shared_ptr<const TokenVocabulary> vocab) {
  Result<Grammar> g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.ok()) << g.error();
  return std::make_shared<const CompiledGrammar>(std::move(g).value(), std::move(vocab));
}

TEST(GrammarMatcher, JsonMasksEqualBruteForce) {
  auto g = compile(kJsonGbnf, random_vocab(1, "{}[]\",:. \n0123456789-eEtruefalsnabc\\u", 600));
  EXPECT_GT(check_random_walks(g, 11, 6, 60), 100);
}

TEST(GrammarMatcher, AmbiguousMasksEqualBruteForce) {
  auto g = compile(kAmbiguousGbnf, random_vocab(2, "xye[]!abz", 300));
  EXPECT_GT(check_random_walks(g, 12, 20, 40), 100);
}

TEST(GrammarMatcher, UnicodeMasksEqualBruteForce) {
  // Tokens cut code points in the middle, as byte-level BPE vocabularies do.
  std::string alphabet = "abz .";
  alphabet += "é€😀ß";
  auto g = compile(kUnicodeGbnf, random_vocab(3, alphabet, 400));
  EXPECT_GT(check_random_walks(g, 13, 20, 40), 100);
}

TEST(GrammarMatcher, Utf8StringMasksEqualBruteForce) {
  // String content takes every well-formed character: whole subtrees of well-formed tokens are accepted without
  // a walk, and must still exclude every token with a quote, a control byte or a malformed sequence.
  auto g = compile(kJsonGbnf, random_piece_vocab(4, kUtf8Pieces, 700));
  EXPECT_GT(check_random_walks(g, 15, 8, 40), 100);
  // Content that leaves out some characters (é, the emoji's block) and some ASCII: no such shortcut may apply.
  auto narrow = compile(R"gbnf(
root ::= "\"" [^"\\\x00-\x1Fé\U0001F600-\U0001F64F]* "\"" ("," root)?
)gbnf",
                        random_piece_vocab(5, kUtf8Pieces, 700));
  EXPECT_GT(check_random_walks(narrow, 16, 8, 40), 100);
}

TEST(GrammarMatcher, BundledVocabularyMasksEqualBruteForce) {
  auto file = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(file.ok()) << file.error();
  auto tokenizer = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  auto vocab = TokenVocabulary::from_tokenizer(**tokenizer);
  EXPECT_EQ(vocab->vocab_size(), 512);
  EXPECT_FALSE(vocab->stop_ids().empty());
  auto g = compile(kJsonGbnf, vocab);
  EXPECT_GT(check_random_walks(g, 14, 4, 50), 50);
}

TEST(GrammarMatcher, StopTokenExactlyWhenComplete) {
  auto g = testing::with_bytes(parse_gbnf(R"(root ::= "ab" "c"?)").value());
  const TokenId stop = 256;
  GrammarMatcher m(g);
  EXPECT_FALSE(m.can_end());
  EXPECT_FALSE(m.accept_token(stop));
  EXPECT_TRUE(m.accept_token('a'));
  EXPECT_FALSE(m.accept_token('c'));
  EXPECT_TRUE(m.accept_token('b'));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.is_complete());  // "c" may still come
  GrammarMatcher done = m;
  EXPECT_TRUE(done.accept_token('c'));
  EXPECT_TRUE(done.is_complete());  // nothing but the stop token can follow
  std::vector<uint32_t> mask(TokenVocabulary::bytes()->mask_words());
  done.fill_mask(mask);
  EXPECT_EQ(allowed_ids(mask, 257), std::vector<TokenId>{stop});
  EXPECT_TRUE(m.accept_token(stop));
  EXPECT_TRUE(m.is_stopped());
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.accept_token('c'));
  EXPECT_FALSE(m.accept_token(stop));
  EXPECT_FALSE(m.accept_token(-1));
  EXPECT_FALSE(m.accept_token(257));
}

TEST(GrammarMatcher, RollbackRestoresEachEarlierState) {
  auto g = compile(kJsonGbnf, random_vocab(4, "{}[]\",:. 0123456789abc", 300));
  const TokenVocabulary& vocab = g->vocabulary();
  GrammarMatcher m(g, /*max_rollback_tokens=*/8);
  std::mt19937_64 rng(5);
  std::vector<std::vector<uint32_t>> masks;
  for (int32_t step = 0; step < 12 && !m.is_complete(); ++step) {
    std::vector<uint32_t> mask(vocab.mask_words());
    m.fill_mask(mask);
    masks.push_back(mask);
    std::vector<TokenId> ids = allowed_ids(mask, vocab.vocab_size());
    std::erase_if(ids, [&](TokenId id) {  // stay away from the end, so that the walk is 12 tokens long
      GrammarMatcher copy(m);
      return !copy.accept_token(id) || copy.can_end();
    });
    ASSERT_FALSE(ids.empty());
    ASSERT_TRUE(m.accept_token(ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)]));
  }
  ASSERT_EQ(masks.size(), 12u);
  EXPECT_EQ(m.num_rollback_tokens(), 8);
  EXPECT_FALSE(m.rollback(9));
  EXPECT_FALSE(m.rollback(-1));
  EXPECT_TRUE(m.rollback(3));
  std::vector<uint32_t> mask(vocab.mask_words());
  m.fill_mask(mask);
  EXPECT_EQ(mask, masks[9]);
  EXPECT_TRUE(m.rollback(5));
  m.fill_mask(mask);
  EXPECT_EQ(mask, masks[4]);
  EXPECT_EQ(m.num_rollback_tokens(), 0);
  EXPECT_TRUE(m.rollback(0));
}

TEST(GrammarMatcher, RollbackOfAStopToken) {
  auto g = testing::with_bytes(parse_gbnf(R"(root ::= "a"+)").value());
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_token('a'));
  ASSERT_TRUE(m.accept_token(256));
  EXPECT_TRUE(m.is_stopped());
  EXPECT_TRUE(m.rollback(1));
  EXPECT_FALSE(m.is_stopped());
  EXPECT_TRUE(m.accept_token('a'));
}

TEST(GrammarMatcher, CopiesAreIndependent) {
  auto g = testing::with_bytes(parse_gbnf(R"g(root ::= "(" root ")" | "x")g").value());
  GrammarMatcher a(g);
  ASSERT_TRUE(a.accept_bytes("(("));
  GrammarMatcher b = a;
  ASSERT_TRUE(a.accept_bytes("x))"));
  EXPECT_TRUE(a.is_complete());
  EXPECT_FALSE(b.can_end());
  EXPECT_FALSE(b.accept_bytes(")"));
  ASSERT_TRUE(b.accept_bytes("(x)))"));
  EXPECT_TRUE(b.is_complete());
  GrammarMatcher c = std::move(b);
  EXPECT_TRUE(c.is_complete());
  c = a;
  EXPECT_TRUE(c.is_complete());
  GrammarMatcher d(g);
  d = std::move(c);
  EXPECT_TRUE(d.is_complete());
  GrammarMatcher e(g);
  ASSERT_TRUE(e.accept_bytes("("));
  d = e;  // copy-assigned over a matcher in another state: independent afterwards
  ASSERT_TRUE(d.accept_bytes("x)"));
  EXPECT_TRUE(d.is_complete());
  EXPECT_FALSE(e.can_end());
}

TEST(GrammarMatcher, DeepNestingCollectsFramesAndStaysCorrect) {
  // Each '(' pushes a frame; after thousands of tokens the pool is collected several times.
  auto g = testing::with_bytes(parse_gbnf(R"g(root ::= "(" root ")" | "x")g").value());
  GrammarMatcher m(g, 4);
  for (int32_t i = 0; i < 20000; ++i) ASSERT_TRUE(m.accept_token('('));
  EXPECT_EQ(m.min_bytes_to_complete(), 20001u);
  ASSERT_TRUE(m.accept_token('x'));
  for (int32_t i = 0; i < 19999; ++i) ASSERT_TRUE(m.accept_token(')')) << i;
  EXPECT_FALSE(m.can_end());
  std::vector<uint32_t> mask(TokenVocabulary::bytes()->mask_words());
  m.fill_mask(mask);
  EXPECT_EQ(allowed_ids(mask, 257), std::vector<TokenId>{')'});
  ASSERT_TRUE(m.accept_token(')'));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarMatcher, AllowedNextBytes) {
  auto g = testing::with_bytes(parse_gbnf(R"(root ::= [a-c] "x" | "d")").value());
  GrammarMatcher m(g);
  const std::bitset<256> bytes = m.allowed_next_bytes();
  EXPECT_EQ(bytes.count(), 4u);
  EXPECT_TRUE(bytes.test('a') && bytes.test('c') && bytes.test('d'));
  EXPECT_EQ(m.min_bytes_to_complete(), 1u);
}

}  // namespace
}  // namespace pagoda::grammar
