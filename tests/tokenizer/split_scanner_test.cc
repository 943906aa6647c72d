// The hand-written split scanners against the PCRE2 path of the same
// pattern: first the character table over every code point, then the matches
// of every string up to three characters over an alphabet holding each class
// the scanners distinguish (and every character they test by value), then
// random longer strings. tests/fuzz/split_scanner_fuzz.cc goes on from here.
#include "tokenizer/split_scanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "tokenizer/char_class.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/regex.h"

namespace tokpack {
namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

std::string Utf8(uint32_t cp) {
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

Spans Matches(const Regex& re, std::string_view text) {
  Spans out;
  EXPECT_TRUE(re.ForEachMatch(text, [&](size_t s, size_t e) { out.emplace_back(s, e); }).ok());
  return out;
}

struct Pair {
  std::string name;
  std::unique_ptr<Regex> scanned, pcre2;
};

// Each recognised pattern, compiled both ways, in both dialects.
std::vector<Pair> Pairs() {
  std::vector<Pair> out;
  for (std::string_view pattern : SplitScanner::KnownPatterns()) {
    for (RegexDialect d : {RegexDialect::kRust, RegexDialect::kOniguruma}) {
      Pair p;
      p.name = std::string(SplitScanner::ForPattern(pattern, d)->name()) +
               (d == RegexDialect::kRust ? "/rust" : "/oniguruma");
      p.scanned = std::move(Regex::Compile(pattern, d).value());
      p.pcre2 = std::move(Regex::Compile(pattern, d, RegexEngine::kPcre2).value());
      EXPECT_NE(p.scanned->scanner(), nullptr) << p.name;
      EXPECT_EQ(p.pcre2->scanner(), nullptr) << p.name;
      out.push_back(std::move(p));
    }
  }
  return out;
}

// A character of each class combination the scanners tell apart, and each
// character they compare by value (apostrophe, contraction letters in both
// cases and their non-ASCII fold, space, CR, LF, slash).
const std::vector<uint32_t>& Alphabet() {
  // clang-format off
  static const std::vector<uint32_t> kAlphabet = {
      's', 'S', 't', 'r', 'E', 'v', 'm', 'l', 'L', 'd', 'x', 'K', '\'', ' ', '\t', '\r', '\n',
      '/', '1', '.', 0x17F /* long s */, 0x212A /* Kelvin */, 0xE9, 0xC4, 0x1C5 /* Lt */,
      0x2B0 /* Lm */, 0x4E2D /* Lo */, 0x301 /* Mn */, 0x903 /* Mc */, 0xBD /* No */,
      0x663 /* Nd */, 0x2163 /* Nl */, 0x85 /* NEL */, 0xA0, 0x3000, 0x2028, 0x1F600,
      0xAD /* Cf */, 0x0 /* NUL */,
      // What DeepSeek's splits tell apart besides: ASCII punctuation before
      // ASCII letters, \p{P} and \p{S} beyond ASCII, its CJK ranges' edges.
      '!', '-', '\\', 'A', 0x3001, 0xAB, 0x20AC, 0x3042, 0x30FF, 0x9FA5, 0x9FA6, 0x3400, 0x1,
      0x200B};
  // clang-format on
  return kAlphabet;
}

TEST(SplitScannerTest, CharacterTableMatchesPcre2OnEveryCodePoint) {
  const std::vector<std::pair<const char*, uint8_t>> classes = {
      {R"(\p{L})", CharClass::kLetter},
      {R"(\p{N})", CharClass::kNumber},
      {R"(\s)", CharClass::kSpace},  // Regex's \s, with NEL.
      {R"([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])", CharClass::kUpperish},
      {R"([\p{Ll}\p{Lm}\p{Lo}\p{M}])", CharClass::kLowerish},
      {R"([\r\n])", CharClass::kNewline},
      {R"(\p{M})", CharClass::kMark},
      {R"([\p{P}\p{S}])", CharClass::kPunct},
  };
  for (const auto& [klass, bit] : classes) {
    auto re = Regex::Compile(std::string("\\A") + klass, RegexDialect::kRust, RegexEngine::kPcre2);
    ASSERT_TRUE(re.ok()) << re.status().ToString();
    size_t wrong = 0;
    for (uint32_t cp = 0; cp < 0x110000; ++cp) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const std::string s = Utf8(cp);
      size_t a = 0, b = 0;
      const bool in = *(*re)->Search(s, 0, &a, &b);
      size_t len = 0;
      if (in != ((CharClassAt(s, 0, &len) & bit) != 0) && wrong++ < 5) {
        ADD_FAILURE() << klass << " U+" << std::hex << cp;
      }
      EXPECT_EQ(len, s.size());
    }
    EXPECT_EQ(wrong, 0u) << klass;
  }
}

TEST(SplitScannerTest, EveryShortStringSplitsAsPcre2Does) {
  const std::vector<Pair> pairs = Pairs();
  std::vector<std::string> chars;
  for (uint32_t cp : Alphabet()) chars.push_back(Utf8(cp));
  const size_t k = chars.size();
  size_t checked = 0;
  for (size_t len = 1; len <= 3; ++len) {
    size_t total = 1;
    for (size_t i = 0; i < len; ++i) total *= k;
    for (size_t code = 0; code < total; ++code) {
      std::string text;
      for (size_t c = code, i = 0; i < len; ++i, c /= k) text += chars[c % k];
      for (const Pair& p : pairs) {
        ASSERT_EQ(Matches(*p.scanned, text), Matches(*p.pcre2, text))
            << p.name << " on '" << text << "'";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000000u);
}

TEST(SplitScannerTest, RandomTextSplitsAsPcre2Does) {
  const std::vector<Pair> pairs = Pairs();
  std::vector<std::string> chars;
  for (uint32_t cp : Alphabet()) chars.push_back(Utf8(cp));
  std::mt19937 rng(31);
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    const int len = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < len; ++i) {
      // Mostly the alphabet; sometimes any code point.
      uint32_t cp = rng() % 8 == 0 ? rng() % 0x110000 : Alphabet()[rng() % chars.size()];
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'a';
      text += Utf8(cp);
    }
    for (const Pair& p : pairs) {
      ASSERT_EQ(Matches(*p.scanned, text), Matches(*p.pcre2, text))
          << p.name << " on '" << text << "'";
    }
  }
}

TEST(SplitScannerTest, RecognisesEachModelFamily) {
  std::vector<std::string> names;
  for (std::string_view p : SplitScanner::KnownPatterns()) {
    names.push_back(SplitScanner::ForPattern(p, RegexDialect::kOniguruma)->name());
  }
  for (const char* want :
       {"gpt2", "cl100k", "o200k", "llama3", "qwen2", "qwen3.5", "digits3", "cjk", "deepseek"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
}

TEST(SplitScannerTest, OnlyTheKnownPatternsAreScanned) {
  EXPECT_EQ(SplitScanner::ForPattern(R"(\p{L}+|\s+)", RegexDialect::kRust), nullptr);
  // One character away from cl100k's pattern is another pattern.
  std::string almost = SplitPatternPreset("cl100k_base");
  almost.back() = 'S';
  EXPECT_EQ(SplitScanner::ForPattern(almost, RegexDialect::kRust), nullptr);
  ASSERT_NE(SplitScanner::ForPattern(SplitPatternPreset("llama3"), RegexDialect::kOniguruma),
            nullptr);
  EXPECT_STREQ(
      SplitScanner::ForPattern(SplitPatternPreset("qwen2"), RegexDialect::kOniguruma)->name(),
      "qwen2");
}

}  // namespace
}  // namespace tokpack
