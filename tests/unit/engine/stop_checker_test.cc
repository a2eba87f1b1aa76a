// Tests for StopChecker (src/engine/stop_checker.h): pass-through, holding back and flushing, stops spanning
// pushes, competing candidates, UTF-8, and a randomized check that chunking never changes the result.
#include "engine/stop_checker.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace pagoda {
namespace {

// What one stream produced: all text emitted (plus the flush), whether it stopped, and each push's output.
struct StreamResult {
  std::string text;
  bool stopped = false;
  std::vector<std::string> pieces;
};

StreamResult run(std::vector<std::string> stops, const std::vector<std::string>& pushes, bool flush = true) {
  StopChecker checker(std::move(stops));
  StreamResult r;
  for (const std::string& push : pushes) {
    StopChecker::Output out = checker.push(push);
    r.text += out.text;
    r.pieces.push_back(out.text);
    if (out.stopped) {
      EXPECT_FALSE(r.stopped) << "stopped twice";
      r.stopped = true;
    }
  }
  if (flush) r.text += checker.flush();
  return r;
}

std::vector<std::string> bytes_of(const std::string& text) {
  std::vector<std::string> out;
  for (char c : text) out.emplace_back(1, c);
  return out;
}

TEST(StopCheckerTest, NoStopStringsPassStraightThrough) {
  StreamResult r = run({}, {"Hello", ", ", "world"}, /*flush=*/false);
  EXPECT_EQ(r.pieces, (std::vector<std::string>{"Hello", ", ", "world"}));
  EXPECT_FALSE(r.stopped);
}

TEST(StopCheckerTest, UnrelatedTextPassesImmediately) {
  StreamResult r = run({"STOP"}, {"hello ", "world"}, /*flush=*/false);
  EXPECT_EQ(r.pieces, (std::vector<std::string>{"hello ", "world"}));
}

TEST(StopCheckerTest, HoldsBackAPossiblePrefixAndFlushesIt) {
  StopChecker checker({"STOP"});
  StopChecker::Output out = checker.push("abc ST");
  EXPECT_EQ(out.text, "abc ");
  EXPECT_FALSE(out.stopped);
  out = checker.push("O");
  EXPECT_EQ(out.text, "");
  out = checker.push("x");  // "STOx" is no stop: all of it goes out
  EXPECT_EQ(out.text, "STOx");
  out = checker.push("S");
  EXPECT_EQ(out.text, "");
  EXPECT_EQ(checker.flush(), "S");
  EXPECT_EQ(checker.flush(), "");
}

TEST(StopCheckerTest, HoldsBackOnlyTheLongestTailThatCouldStillMatch) {
  StopChecker checker({"aab"});
  StopChecker::Output out = checker.push("xaaa");  // "aa" could be the start; the first 'a' cannot
  EXPECT_EQ(out.text, "xa");
  out = checker.push("b!");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "");
}

TEST(StopCheckerTest, StopInsideOnePushDropsItAndEverythingAfter) {
  StopChecker checker({"\n\n"});
  StopChecker::Output out = checker.push("one\n\ntwo");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "one");
  EXPECT_EQ(checker.push("more").text, "");
  EXPECT_TRUE(checker.push("more").text.empty());
  EXPECT_FALSE(checker.push("more").stopped);  // stopped is reported once; afterwards nothing is emitted
  EXPECT_EQ(checker.flush(), "");
}

TEST(StopCheckerTest, StopSpanningManyPushes) {
  StreamResult r = run({"<|end|>"}, bytes_of("The end.<|end|>ignored"));
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "The end.");
  r = run({"<|end|>"}, {"The end.<", "|en", "d", "|>ignored"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "The end.");
}

TEST(StopCheckerTest, StopAtTheVeryStart) {
  StreamResult r = run({"Q:"}, {"Q:", " more"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");
}

TEST(StopCheckerTest, SharedPrefixCandidates) {
  // "ab" completes first, so "abc" never gets the chance, however the text is chunked.
  StreamResult whole = run({"abc", "ab"}, {"xxabcyy"});
  StreamResult bytes = run({"abc", "ab"}, bytes_of("xxabcyy"));
  EXPECT_TRUE(whole.stopped);
  EXPECT_EQ(whole.text, "xx");
  EXPECT_EQ(bytes.text, "xx");
  // Only the longer one present in the text: hold "ab" then emit when "abd" rules out "abc".
  StreamResult partial = run({"abc", "abz"}, {"xab", "d"});
  EXPECT_FALSE(partial.stopped);
  EXPECT_EQ(partial.pieces, (std::vector<std::string>{"x", "abd"}));
}

TEST(StopCheckerTest, EarliestCompletedMatchWins) {
  // "bc" completes (at byte 3) before "abcd" could (byte 4).
  EXPECT_EQ(run({"abcd", "bc"}, {"zabcd"}).text, "za");
  EXPECT_EQ(run({"abcd", "bc"}, bytes_of("zabcd")).text, "za");
  // Two matches completing at the same byte: the one starting first wins.
  EXPECT_EQ(run({"c", "abc"}, {"zabc"}).text, "z");
  EXPECT_EQ(run({"c", "abc"}, bytes_of("zabc")).text, "z");
  // A later stop string in the list can win when it occurs earlier in the text.
  EXPECT_EQ(run({"END", "stop"}, {"a stop then END"}).text, "a ");
}

TEST(StopCheckerTest, MultiByteUtf8StopStrings) {
  const std::string stop = "\xe3\x80\x82";                                             // "。" U+3002, 3 bytes
  StreamResult r = run({stop}, bytes_of("\xe6\x97\xa5\xe6\x9c\xac" + stop + "rest"));  // "日本。rest"
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "\xe6\x97\xa5\xe6\x9c\xac");
  // A character sharing the lead bytes ("、" U+3001) is not the stop and comes out whole.
  StopChecker checker({stop});
  EXPECT_EQ(checker.push("\xe3\x80").text, "");
  StopChecker::Output out = checker.push("\x81!");
  EXPECT_FALSE(out.stopped);
  EXPECT_EQ(out.text, "\xe3\x80\x81!");
  // With whole characters pushed, the held-back split point is a character boundary.
  StopChecker emoji({"\xf0\x9f\x9b\x91 end"});  // "🛑 end"
  EXPECT_EQ(emoji.push("go \xf0\x9f\x9b\x91").text, "go ");
  EXPECT_EQ(emoji.push(" en").text, "");
  out = emoji.push("d");
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "");
}

// The emitted text depends only on the whole text, never on how it was split into pushes, and equals the
// text before the earliest-completing stop (or everything, after flush, when none occurs).
TEST(StopCheckerTest, ChunkingNeverChangesTheResult) {
  std::mt19937 rng(99);
  const std::vector<std::string> stops = {"aba", "bb", "abc", "cab"};
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text(rng() % 24, 'a');
    for (char& c : text) c = char('a' + rng() % 3);
    // Reference: the first prefix length at which some stop is a suffix.
    std::string expected = text;
    bool expect_stop = false;
    for (size_t end = 1; end <= text.size() && !expect_stop; ++end) {
      size_t best_start = std::string::npos;
      for (const std::string& s : stops) {
        if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0) {
          best_start = std::min(best_start, end - s.size());
        }
      }
      if (best_start != std::string::npos) {
        expected = text.substr(0, best_start);
        expect_stop = true;
      }
    }
    std::vector<std::string> pushes;
    for (size_t pos = 0; pos < text.size();) {
      const size_t len = std::min(text.size() - pos, size_t(rng() % 5));  // empty pushes too
      pushes.push_back(text.substr(pos, len));
      pos += len;
    }
    StreamResult r = run(stops, pushes);
    ASSERT_EQ(r.text, expected) << text;
    ASSERT_EQ(r.stopped, expect_stop) << text;
  }
}

TEST(StopCheckerTest, SaysWhichStopStringMatched) {
  StopChecker checker({"abcd", "bc", "xyz"});
  EXPECT_EQ(checker.matched(), "");
  checker.push("za");
  EXPECT_FALSE(checker.stopped());
  EXPECT_TRUE(checker.push("bcd").stopped);
  EXPECT_EQ(checker.matched(), "bc");  // the one that completed first
  StopChecker other({"abcd", "xyz"});
  other.push("1 xy");
  other.push("z 2");
  EXPECT_EQ(other.matched(), "xyz");
}

}  // namespace
}  // namespace pagoda
