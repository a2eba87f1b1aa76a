// Tests for the per-state token masks as CompiledGrammar builds them (src/grammar/compiled_grammar.h): shared whole
// with an equivalent state, or taken in part from one (src/grammar/state_equivalence.h) and walked for the longer
// tokens only, every mask equals the eager, uncached build_state_token_mask of the same state, in any order the
// states are reached; the trie walk equals a token-by-token classification, with the string slice taken whole by
// free string content and by nothing else; and same_behaviour_depth on states whose distance is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "format/gguf_reader.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/stack_pool.h"
#include "grammar/stack_set.h"
#include "grammar/state_equivalence.h"
#include "grammar/state_token_mask.h"
#include "tokenizer/vocab_loader.h"

namespace pagoda::grammar {
namespace {

// Random tokens of 1..max_len pieces, so that a vocabulary holds tokens both shorter and longer than the bounded
// strings' remaining lengths.
std::shared_ptr<const TokenVocabulary> piece_vocab(uint64_t seed, const std::vector<std::string>& pieces,
                                                   int32_t num_tokens, int32_t max_len) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> bytes(pieces);
  std::uniform_int_distribution<size_t> pick(0, pieces.size() - 1);
  std::uniform_int_distribution<int32_t> len(1, max_len);
  while (int32_t(bytes.size()) < num_tokens) {
    std::string t;
    for (int32_t i = len(rng); i > 0; --i) t += pieces[pick(rng)];
    bytes.push_back(t);
  }
  bytes.push_back("");  // the stop token
  std::vector<TokenId> stops{TokenId(bytes.size() - 1)};
  return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(stops));
}

const std::vector<std::string> kJsonPieces = {"a", "b", "z", " ", "\"", "\\", ":", ",", "{", "}", "[", "]", "\n",
                                              "u", "0", "7", "-", ".", "é", "€", "😀", "\xC3", "\xFF", "\\n",
                                              "\\u00e9", "\"a\"", "\": ", "\", \"", "ab", "abc"};

struct MaskSets {
  std::vector<TokenId> accepted;
  std::vector<int32_t> uncertain;
  bool operator==(const MaskSets&) const = default;
};

MaskSets sets_of(const StateTokenMask& m, const TokenVocabulary& vocab) {
  MaskSets s;
  for (TokenId id = 0; id < vocab.vocab_size(); ++id) {
    if (!m.accepted_bits.empty() && (m.accepted_bits[size_t(id) >> 5] >> (id & 31) & 1)) s.accepted.push_back(id);
  }
  s.accepted.insert(s.accepted.end(), m.accepted_ids.begin(), m.accepted_ids.end());
  std::sort(s.accepted.begin(), s.accepted.end());
  s.uncertain = m.uncertain;
  return s;
}

// Builds every state's mask through `compiled` in `order` and compares each with the eager walk.
void expect_masks_equal_eager(const CompiledGrammar& compiled, std::vector<uint32_t> order) {
  const Grammar& g = compiled.grammar();
  const ReturnSites returns = ReturnSites::of(g);
  for (const uint32_t s : order) {
    if (!g.states[s].has_byte_edges()) continue;
    const MaskSets got = sets_of(compiled.state_mask(s), compiled.vocabulary());
    const MaskSets want = sets_of(build_state_token_mask(g, returns, compiled.vocabulary(), s), compiled.vocabulary());
    EXPECT_EQ(got.accepted, want.accepted) << "state " << s;
    EXPECT_EQ(got.uncertain, want.uncertain) << "state " << s;
    if (::testing::Test::HasFailure()) return;
  }
}

struct Counts {
  size_t shared = 0, partly = 0;
};

// Every state's mask in ascending, descending and a random order (each a fresh CompiledGrammar), compared with the
// eager walk; returns how often the masks were shared or partly walked over the three.
Counts check_every_order(const Grammar& g, const std::shared_ptr<const TokenVocabulary>& vocab, uint64_t seed) {
  std::vector<uint32_t> order(g.states.size());
  for (uint32_t s = 0; s < order.size(); ++s) order[s] = s;
  Counts counts;
  for (int32_t pass = 0; pass < 3; ++pass) {
    if (pass == 1) std::reverse(order.begin(), order.end());
    if (pass == 2) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    CompiledGrammar compiled(g, vocab);
    expect_masks_equal_eager(compiled, order);
    counts.shared += compiled.num_shared_state_masks();
    counts.partly += compiled.num_partly_walked_state_masks();
  }
  return counts;
}

Grammar schema_grammar(const char* schema) {
  JsonGrammarOptions options;
  options.any_property_order = true;
  Result<Grammar> g = json_schema_to_grammar(std::string_view(schema), options);
  EXPECT_TRUE(g.ok()) << g.error();
  return g.ok() ? std::move(g).value() : Grammar{};
}

// Rules called from several places (tokens that run past a rule's end into its callers), nullable calls and bounded
// repeats of calls: the two walks' shared GBNF case.
constexpr const char* kGbnfWithCalls = R"gbnf(
root ::= item ("," item){0,6}
item ::= word | word word | "[" root? "]" | q{2,9}
word ::= [a-z]{1,7} " "?
q ::= "\"" [a-z]{0,5} "\""
)gbnf";

TEST(StateTokenMask, BoundedStringsShareMasksAndEqualTheEagerWalk) {
  // maxLength 40 outlasts every token (at most 12 pieces of up to 6 bytes, some longer): its first states share one
  // mask; the last ones, and the short strings', take their shorter tokens from a neighbour.
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 40},
      "code": {"type": "string", "minLength": 2, "maxLength": 9},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3}},
      "required": ["name"]})");
  const Counts counts = check_every_order(g, piece_vocab(1, kJsonPieces, 900, 5), 7);
  EXPECT_GT(counts.shared, 0u);
  EXPECT_GT(counts.partly, 0u);
}

TEST(StateTokenMask, PatternsEnumsAndNumbersEqualTheEagerWalk) {
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "id": {"type": "string", "pattern": "^[a-z]{3,20}-[0-9]{2,6}$"},
      "day": {"type": "string", "format": "date"},
      "kind": {"enum": ["alpha", "alphabet", "alpine", "beta"]},
      "n": {"type": "integer", "minimum": -20, "maximum": 12345},
      "x": {"type": "number"}}})");
  check_every_order(g, piece_vocab(2, kJsonPieces, 900, 6), 8);
}

TEST(StateTokenMask, GbnfWithCallsAndAmbiguityEqualsTheEagerWalk) {
  // Rules called from several places (uncertain tokens at their ends), nullable calls and bounded repeats of calls.
  Result<Grammar> g = parse_gbnf(kGbnfWithCalls);
  ASSERT_TRUE(g.ok()) << g.error();
  check_every_order(*g, piece_vocab(3, {"a", "b", "z", " ", ",", "[", "]", "\"", "ab", "\"a", "a\"", "zz"}, 600, 7),
                    9);
}

TEST(StateTokenMask, BundledVocabularyEqualsTheEagerWalk) {
  auto file = format::GgufFile::open(PAGODA_TEST_BUNDLED_MODEL);
  ASSERT_TRUE(file.ok()) << file.error();
  auto tokenizer = tokenizer_from_gguf(*file);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.error();
  const Grammar g = schema_grammar(R"({"type": "object", "properties": {
      "story": {"type": "string", "minLength": 1, "maxLength": 30},
      "words": {"type": "array", "items": {"type": "string", "maxLength": 6}}}})");
  const Counts counts = check_every_order(g, TokenVocabulary::from_tokenizer(**tokenizer), 10);
  EXPECT_GT(counts.shared + counts.partly, 0u);
}

// The trie walk's classification computed token by token, without the trie or any of its shortcuts (whole
// subtrees accepted under a looping state, pruning): each token's bytes stepped from the state above an unknown
// caller (ctx) and through every caller the rule may return to, outwards to any depth (ext), as
// state_token_mask.h defines accepted, rejected and uncertain.
MaskSets token_by_token(const Grammar& g, const ReturnSites& returns, const TokenVocabulary& vocab, uint32_t state) {
  StackPool pool;
  StackStepper stepper(g, pool);
  auto bottom_of = [&](uint32_t rule) {
    return rule == g.root_rule && !returns.root_is_called ? kRootBottom : kUnknownBottom;
  };
  auto add_callers = [&](std::vector<uint32_t> work, StackSet& out) {
    std::vector<bool> done(g.rules.size(), false);
    StackSet scratch;
    while (!work.empty()) {
      const uint32_t rule = work.back();
      work.pop_back();
      if (done[rule]) continue;
      done[rule] = true;
      if (rule == g.root_rule) out.can_end = true;
      for (const uint32_t t : returns.by_rule[rule]) {
        stepper.start(t, bottom_of(g.states[t].rule_id), scratch);
        out.tops.insert(out.tops.end(), scratch.tops.begin(), scratch.tops.end());
        out.can_end = out.can_end || scratch.can_end;
        out.overflowed = out.overflowed || scratch.overflowed;
        work.insert(work.end(), scratch.escaped_rules.begin(), scratch.escaped_rules.end());
      }
    }
  };
  StackSet ctx0, ext0;
  stepper.start(state, bottom_of(g.states[state].rule_id), ctx0);
  if (ctx0.escaped) add_callers(ctx0.escaped_rules, ext0);
  MaskSets out;
  for (int32_t k = 0; k < vocab.num_sorted(); ++k) {
    const std::string_view w = vocab.sorted_bytes(k);
    StackSet ctx = ctx0, ext = ext0, next_ctx, next_ext;
    enum { kAccepted, kRejected, kUncertain } verdict = kRejected;
    for (size_t i = 0; i < w.size(); ++i) {
      stepper.step(ctx, uint8_t(w[i]), next_ctx);
      stepper.step(ext, uint8_t(w[i]), next_ext);
      if (next_ext.escaped) add_callers(next_ext.escaped_rules, next_ext);
      if (next_ctx.escaped) add_callers(next_ctx.escaped_rules, next_ext);
      std::swap(ctx, next_ctx);
      std::swap(ext, next_ext);
      if (ctx.overflowed || ext.overflowed) {
        verdict = kUncertain;
        break;
      }
      const bool inside = !ctx.tops.empty() || ctx.escaped || ctx.can_end;
      const bool outside = !ext.tops.empty() || ext.can_end;
      if (!inside && !outside) break;
      if (i + 1 == w.size()) verdict = inside ? kAccepted : kUncertain;
    }
    if (verdict == kAccepted) out.accepted.push_back(vocab.sorted_id(k));
    if (verdict == kUncertain) out.uncertain.push_back(k);
  }
  std::sort(out.accepted.begin(), out.accepted.end());
  return out;
}

void expect_walk_equals_token_by_token(const Grammar& g, const std::shared_ptr<const TokenVocabulary>& vocab) {
  const ReturnSites returns = ReturnSites::of(g);
  size_t checked = 0, accepted = 0, uncertain = 0;
  for (uint32_t s = 0; s < g.states.size(); ++s) {
    if (!g.states[s].has_byte_edges()) continue;
    const MaskSets want = token_by_token(g, returns, *vocab, s);
    const MaskSets got = sets_of(build_state_token_mask(g, returns, *vocab, s), *vocab);
    ASSERT_EQ(got.accepted, want.accepted) << "state " << s;
    ASSERT_EQ(got.uncertain, want.uncertain) << "state " << s;
    ++checked;
    accepted += want.accepted.size();
    uncertain += want.uncertain.size();
  }
  EXPECT_GT(checked, 0u);
  EXPECT_GT(accepted, 0u);
}

TEST(StateTokenMask, TrieWalkEqualsTokenByToken) {
  // Free strings (whole subtrees accepted under their looping state, multi-byte characters included), bounded
  // strings (a new state at every depth), patterns, enums and numbers.
  expect_walk_equals_token_by_token(schema_grammar(R"({"type": "object", "properties": {
      "free": {"type": "string"},
      "name": {"type": "string", "minLength": 2, "maxLength": 9},
      "id": {"type": "string", "pattern": "^[a-z]{3,5}-[0-9]{2}$"},
      "kind": {"enum": ["alpha", "alphabet", "beta"]},
      "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
      "required": ["name"]})"),
                                    piece_vocab(4, kJsonPieces, 500, 5));
  // Rules called from many places (tokens that run past a rule's end into its callers), nullable calls.
  Result<Grammar> g = parse_gbnf(kGbnfWithCalls);
  ASSERT_TRUE(g.ok()) << g.error();
  expect_walk_equals_token_by_token(
      *g, piece_vocab(5, {"a", "b", "z", " ", ",", "[", "]", "\"", "ab", "\"a", "a\"", "zz", "é"}, 400, 6));
}

TEST(StateTokenMask, TrieWalkEqualsTokenByTokenThroughSharedAndAmbiguousRules) {
  // `str` and `num` are called from many places, so tokens that end them go on in every caller (the walk's interned
  // configurations outside the rule); `str`'s two branches read the same content, so its states sit under two
  // stacks at once, each looping on the content bytes (a subtree accepted whole under one of several stacks).
  Result<Grammar> g = parse_gbnf(R"gbnf(
root ::= obj
obj ::= "{" (pair ("," pair)*)? "}"
pair ::= str ":" val
val ::= str | num | obj | "[" (val ("," val)*)? "]" | "<" str str ">"
str ::= "\"" [a-z ]* "\"" | "\"" [a-z é]* "x\""
num ::= "-"? [0-9]+ ("." [0-9]+)?
)gbnf");
  ASSERT_TRUE(g.ok()) << g.error();
  expect_walk_equals_token_by_token(
      *g, piece_vocab(6, {"a", "b", "x", " ", ",", ":", "{", "}", "[", "]", "<", ">", "\"", "0", "7", "-", ".", "é",
                          "\":", "\",", "x\"", "\"}", "ab", "12", "\xC3"},
                      700, 6));
}

// The states of `g` whose masks take the vocabulary's string slice whole.
size_t num_slice_states(const Grammar& g, const TokenVocabulary& vocab) {
  size_t n = 0;
  for (uint32_t s = 0; s < g.states.size(); ++s) n += takes_string_slice(g, vocab, s) ? 1 : 0;
  return n;
}

TEST(StateTokenMask, StringSliceTakenByFreeStringContentOnly) {
  const std::shared_ptr<const TokenVocabulary> vocab = piece_vocab(11, kJsonPieces, 700, 5);
  ASSERT_NE(vocab->outside_string_slice(), nullptr);
  // Free strings, strings of a minimum length only (their last state loops), and a pattern that takes every
  // character: each content loop takes the slice, escapes (\n, \u00e9 in the vocabulary) go through the walk.
  const Grammar free = schema_grammar(R"({"type": "object", "properties": {
      "free": {"type": "string"},
      "long": {"type": "string", "minLength": 3},
      "any": {"type": "string", "pattern": "^a.*$"},
      "tags": {"type": "array", "items": {"type": "string"}}}})");
  EXPECT_GE(num_slice_states(free, *vocab), 3u);
  expect_walk_equals_token_by_token(free, vocab);
  check_every_order(free, vocab, 12);
  // Bounded strings count characters (no state loops), a pattern's class leaves characters out, an enum is a
  // finite set, a string format has its own automaton, and no other key is allowed: none takes the slice.
  const Grammar bounded = schema_grammar(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 40},
      "code": {"type": "string", "minLength": 2, "maxLength": 9},
      "id": {"type": "string", "pattern": "^[a-z ]+$"},
      "not_quote": {"type": "string", "pattern": "^[^b]*$"},
      "kind": {"enum": ["alpha", "alphabet", "beta"]},
      "day": {"type": "string", "format": "date"}}, "additionalProperties": false})");
  EXPECT_EQ(num_slice_states(bounded, *vocab), 0u);
  expect_walk_equals_token_by_token(bounded, vocab);
  // GBNF content that takes every character but '"' and '\\' raw, and escapes: its loop takes the slice too.
  Result<Grammar> gbnf = parse_gbnf(R"gbnf(
root ::= "[" (str ("," str)*)? "]"
str ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])* "\""
)gbnf");
  ASSERT_TRUE(gbnf.ok()) << gbnf.error();
  EXPECT_EQ(num_slice_states(*gbnf, *vocab), 1u);
  expect_walk_equals_token_by_token(*gbnf, vocab);
}

TEST(StateEquivalence, DepthOfABoundedRepeat) {
  // root ::= [a-z]{0,5} ";" : the state with k letters left reads like the one with m > k left for every string of up
  // to k + 1 bytes but k + 1 letters, which only the second takes: strings shorter than k + 1 bytes read alike.
  Result<Grammar> g = parse_gbnf("root ::= [a-z]{0,5} \";\"");
  ASSERT_TRUE(g.ok()) << g.error();
  std::vector<uint32_t> chain{g->rules[g->root_rule].start_state};  // 5 letters left, 4, ...
  while (chain.size() < 6) chain.push_back(g->next_state(chain.back(), 'a'));
  for (size_t i = 0; i < chain.size(); ++i) {
    for (size_t j = i + 1; j < chain.size(); ++j) {
      const uint32_t left = uint32_t(5 - j);  // the fewer letters left of the two
      EXPECT_EQ(same_behaviour_depth(*g, chain[i], chain[j], 100), left + 1) << i << " " << j;
      EXPECT_EQ(same_behaviour_depth(*g, chain[j], chain[i], 100), left + 1);
    }
    EXPECT_EQ(same_behaviour_depth(*g, chain[i], chain[i], 100), 100u);
  }
  EXPECT_EQ(same_behaviour_depth(*g, chain[0], chain[1], 3), 3u);  // capped by the limit
  EXPECT_EQ(state_local_key(*g, chain[0]), state_local_key(*g, chain[3]));
  EXPECT_NE(state_local_key(*g, chain[0]), state_local_key(*g, chain[5]));  // only ";" left
}

}  // namespace
}  // namespace pagoda::grammar
