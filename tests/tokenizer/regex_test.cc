#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tokpack {
namespace {

std::vector<std::pair<size_t, size_t>> Matches(std::string_view pattern, std::string_view text,
                                               RegexDialect dialect = RegexDialect::kRust) {
  auto re = Regex::Compile(pattern, dialect);
  EXPECT_TRUE(re.ok()) << re.status().ToString();
  std::vector<std::pair<size_t, size_t>> out;
  EXPECT_TRUE((*re)->ForEachMatch(text, [&](size_t s, size_t e) { out.emplace_back(s, e); }).ok());
  return out;
}

using Spans = std::vector<std::pair<size_t, size_t>>;

TEST(RegexTest, EmptyMatchRightAfterAMatchIsSkipped) {
  // Rust's and Oniguruma's find_iter: no empty match where the last one ended.
  EXPECT_EQ(Matches("a*", "baa"), Spans({{0, 0}, {1, 3}}));
  EXPECT_EQ(Matches("", "é"), Spans({{0, 0}, {2, 2}}));  // Steps whole characters.
}

TEST(RegexTest, WhiteSpaceIncludesNextLine) {
  // U+0085 is White_Space for Rust and Oniguruma; PCRE2's \s lacks it.
  EXPECT_EQ(Matches(R"(\s+)", "a\xC2\x85 b"), Spans({{1, 4}}));
  EXPECT_EQ(Matches(R"([^\s\p{L}]+)", "a\xC2\x85!"), Spans({{3, 4}}));
  EXPECT_EQ(Matches(R"(\s+(?!\S))", "a  \xC2\x85"), Spans({{1, 5}}));
}

TEST(RegexTest, OnigurumaUnicodeEscapesWork) {
  // "[\u4e00-\u9fa5]+" as a tokenizer.json may carry it (Oniguruma syntax).
  const auto dialect = RegexDialect::kOniguruma;
  EXPECT_EQ(Matches(R"([\u4e00-\u9fa5]+)", "ab\xE4\xB8\x9C\xE4\xBA\xAC!", dialect),
            Spans({{2, 8}}));
  EXPECT_EQ(Matches(R"(\\u0041)", "\\u0041A", dialect), Spans({{0, 6}}));  // Escaped: literal.
}

TEST(RegexTest, DollarFollowsTheDialect) {
  EXPECT_EQ(Matches("a$", "a\nb", RegexDialect::kOniguruma), Spans({{0, 1}}));
  EXPECT_EQ(Matches("a$", "a\nb", RegexDialect::kRust), Spans());
  EXPECT_EQ(Matches(R"(\s++$)", "x \n", RegexDialect::kRust), Spans({{1, 3}}));
}

TEST(RegexTest, MatchesNeverSplitCharacters) {
  // \p{N}{1,3} over four-byte digits (U+1D7CE MATHEMATICAL BOLD DIGIT ZERO).
  std::string digits;
  for (int i = 0; i < 4; ++i) digits += "\xF0\x9D\x9F\x8E";
  EXPECT_EQ(Matches(R"(\p{N}{1,3})", digits), Spans({{0, 12}, {12, 16}}));
}

TEST(RegexTest, PresetsCompileAndSplitAsTiktoken) {
  for (const char* name : {"gpt2", "r50k_base", "cl100k_base", "o200k_base", "llama3", "qwen2"}) {
    ASSERT_NE(SplitPatternPreset(name), nullptr) << name;
    EXPECT_TRUE(Regex::Compile(SplitPatternPreset(name), RegexDialect::kRust).ok()) << name;
  }
  EXPECT_EQ(SplitPatternFor("cl100k_base"), SplitPatternPreset("cl100k_base"));
  EXPECT_EQ(SplitPatternFor(R"(\w+)"), R"(\w+)");
  // cl100k: "Hello world's  123456" -> Hello| world|'s| |  ... digits in threes.
  EXPECT_EQ(Matches(SplitPatternPreset("cl100k_base"), "Hello world's  1234"),
            Spans({{0, 5}, {5, 11}, {11, 13}, {13, 14}, {14, 15}, {15, 18}, {18, 19}}));
}

TEST(RegexTest, EscapeMatchesLiterally) {
  EXPECT_EQ(Matches(Regex::Escape("a.b*"), "a.b*axb"), Spans({{0, 4}}));
  EXPECT_EQ(Matches(Regex::Escape("\xE2\x96\x81"), "a\xE2\x96\x81"), Spans({{1, 4}}));
}

TEST(RegexTest, BadPatternIsRefusedWithOffset) {
  auto re = Regex::Compile("(ab", RegexDialect::kRust);
  ASSERT_FALSE(re.ok());
  EXPECT_NE(re.status().message().find("does not compile"), std::string::npos);
  EXPECT_NE(re.status().message().find("offset"), std::string::npos);
}

TEST(RegexTest, PatternThatBacktracksWithoutEndStopsWithAnError) {
  // (a+)+$ on 40 a's and a b tries 2^40 ways at the first position: with
  // PCRE2's limits at their maximum it gave up after 2^32 steps, 6 s (a
  // pattern with costlier steps, tens of seconds); tokenizers' Oniguruma
  // stops after 10,000,000 retries (130 ms), and so does this.
  auto re = Regex::Compile("(a+)+$", RegexDialect::kOniguruma);
  ASSERT_TRUE(re.ok());
  const auto start = std::chrono::steady_clock::now();
  const Status st = (*re)->ForEachMatch(std::string(40, 'a') + "b", [](size_t, size_t) {});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(),
            "regex '(a+)+$' gave up on a 41-byte text after 10000328 backtracking steps at one "
            "position (match limit exceeded); tokenizers' Oniguruma stops such patterns alike, "
            "with its retry-limit-in-match");
}

TEST(RegexTest, ModelPatternsCrossLongRunsOnPcre2) {
  // On PCRE2 (a pattern no scanner knows), \s*[\r\n] backtracks across a
  // whole run of spaces at its first position: a step a byte, past the
  // 10,000,000 of a short text, so the limit grows with the text.
  const std::string spaces(12 << 20, ' ');
  for (const char* name : {"llama3", "cl100k_base"}) {
    auto re = Regex::Compile(SplitPatternPreset(name), RegexDialect::kRust, RegexEngine::kPcre2);
    ASSERT_TRUE(re.ok());
    // The run is one piece; before a letter, the run less its last space.
    for (const auto& [text, pieces] : {std::pair{spaces, 1u}, {spaces + "a", 2u}}) {
      size_t n = 0;
      EXPECT_TRUE((*re)->ForEachMatch(text, [&](size_t, size_t) { ++n; }).ok()) << name;
      EXPECT_EQ(n, pieces) << name;
    }
  }
}

TEST(RegexTest, SyntaxOnlyPcre2HasIsRefused) {
  // Oniguruma and fancy-regex refuse each of these; PCRE2 would run them
  // (\C even splits a character into bytes).
  const std::pair<const char*, const char*> cases[] = {
      {R"(\C)", R"(uses \C (a single byte, even inside a UTF-8 character))"},
      {R"(a[b]\C)", R"(uses \C)"},
      {"(*LIMIT_MATCH=1)a", "uses the verb '(*LIMIT_MATCH=1)'"},
      {"(*UTF)a", "uses the verb '(*UTF)'"},
      {"(*CR)a", "uses the verb '(*CR)'"},
      {"a(*SKIP)b", "uses the verb '(*SKIP)'"},
      {"(?C1)a", "uses the callout '(?C1)'"},
      {R"((?C"x")a)", R"(uses the callout '(?C"x")')"},
  };
  for (const auto& [pattern, what] : cases) {
    for (RegexDialect d : {RegexDialect::kOniguruma, RegexDialect::kRust}) {
      auto re = Regex::Compile(pattern, d);
      ASSERT_FALSE(re.ok()) << pattern;
      EXPECT_NE(re.status().message().find(what), std::string::npos) << re.status().message();
      EXPECT_NE(re.status().message().find("which only PCRE2 has"), std::string::npos);
    }
  }
  // The same characters as literal text are fine.
  for (const char* pattern : {R"(\\C)", R"([(*]a)", R"(\(*a)", R"([\]C])", R"(\Q(*\E)"}) {
    EXPECT_TRUE(Regex::Compile(pattern, RegexDialect::kOniguruma).ok()) << pattern;
  }
}

}  // namespace
}  // namespace tokpack
