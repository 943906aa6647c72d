#include "tokenizer/regex.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tokpack
