// The grammar's lazily filled transition table (transition_table.h): no row is filled by the build, a row is filled
// once when first asked for, every entry is the target its state's byte edges give (checked against a scan of the
// edges), a copied grammar answers alike from rows of its own, and threads asking for the same rows at once all
// read complete rows.
#include "grammar/transition_table.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_converter.h"

namespace pagoda::grammar {
namespace {

// The target of `byte` from `state` by a scan of its byte edges: the oracle for the table.
uint32_t target_by_edges(const Grammar& g, uint32_t state, uint8_t byte) {
  for (const ByteEdge& e : g.byte_edges_of(state)) {
    if (byte >= e.lo && byte <= e.hi) return e.target;
  }
  return kNoState;
}

Grammar small_object_grammar() {
  Result<Grammar> g = json_schema_to_grammar(std::string_view(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 12}, "id": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["alpha", "beta", "gamma"]}}}, "required": ["name"]})"));
  EXPECT_TRUE(g.ok()) << g.error();
  return std::move(g).value();
}

TEST(TransitionTableTest, BuildFillsNoRowAndAskingFillsOneRowOnce) {
  Result<Grammar> parsed = parse_gbnf(R"(root ::= "a" [b-d]+ "e" | [0-9a-f] "x")");
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  const Grammar& g = parsed.value();
  ASSERT_GT(g.states.size(), 3u);
  EXPECT_EQ(g.transitions.num_states(), g.states.size());
  EXPECT_EQ(g.transitions.num_classes(), g.num_byte_classes);
  EXPECT_EQ(g.transitions.num_filled_rows(), 0u);
  const uint32_t start = g.rules[g.root_rule].start_state;
  EXPECT_EQ(g.next_state(start, 'a'), target_by_edges(g, start, 'a'));
  EXPECT_EQ(g.transitions.num_filled_rows(), 1u);
  for (uint32_t b = 0; b < 256; ++b) EXPECT_EQ(g.next_state(start, uint8_t(b)), target_by_edges(g, start, uint8_t(b)));
  EXPECT_EQ(g.transitions.num_filled_rows(), 1u);
  EXPECT_EQ(g.next_states_of(start), g.next_states_of(start));
}

TEST(TransitionTableTest, EveryEntryIsTheTargetOfTheStatesByteEdges) {
  const Grammar g = small_object_grammar();
  size_t edges_seen = 0;
  for (uint32_t s = 0; s < g.states.size(); ++s) {
    for (uint32_t b = 0; b < 256; ++b) {
      const uint32_t want = target_by_edges(g, s, uint8_t(b));
      ASSERT_EQ(g.next_state(s, uint8_t(b)), want) << "state " << s << " byte " << b;
      edges_seen += want != kNoState;
    }
  }
  EXPECT_GT(edges_seen, 256u);
  EXPECT_EQ(g.transitions.num_filled_rows(), g.states.size());
}

TEST(TransitionTableTest, ACopiedGrammarFillsRowsOfItsOwn) {
  const Grammar g = small_object_grammar();
  const uint32_t start = g.rules[g.root_rule].start_state;
  (void)g.next_state(start, '{');
  const Grammar copy = g;
  EXPECT_EQ(copy.transitions.num_filled_rows(), 0u);
  EXPECT_NE(copy.next_states_of(start), g.next_states_of(start));
  for (uint32_t s = 0; s < g.states.size(); ++s) {
    for (uint32_t b = 0; b < 256; ++b) ASSERT_EQ(copy.next_state(s, uint8_t(b)), g.next_state(s, uint8_t(b)));
  }
}

TEST(TransitionTableTest, ThreadsAskingForTheSameRowsAtOnceReadCompleteRows) {
  const Grammar g = small_object_grammar();
  std::vector<std::vector<uint32_t>> want(g.states.size(), std::vector<uint32_t>(256));
  for (uint32_t s = 0; s < g.states.size(); ++s) {
    for (uint32_t b = 0; b < 256; ++b) want[s][b] = target_by_edges(g, s, uint8_t(b));
  }
  constexpr int kThreads = 4;
  std::vector<size_t> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Each thread walks the states in its own order, so that threads meet on rows being filled.
      for (uint32_t i = 0; i < g.states.size(); ++i) {
        const uint32_t s = t % 2 == 0 ? i : uint32_t(g.states.size()) - 1 - i;
        for (uint32_t b = 0; b < 256; ++b) mismatches[t] += g.next_state(s, uint8_t(b)) != want[s][b];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0u) << "thread " << t;
  EXPECT_EQ(g.transitions.num_filled_rows(), g.states.size());
}

}  // namespace
}  // namespace pagoda::grammar
