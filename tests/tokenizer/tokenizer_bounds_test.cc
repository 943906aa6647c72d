// What a hostile or careless tokenizer file (or option) can make tokpack do
// (issue 32): every normalizer, added token and quoted string is bounded, and
// what tokpack cannot reproduce is refused at load, naming the component.
#include <gtest/gtest.h>
#include <utf8proc.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/normalizer.h"
#include "tokpack/tokenizer.h"

namespace tokpack {
namespace {

using Ids = std::vector<int>;

// A character-level BPE tokenizer.json over "abcdefgh " (ids 0..8) with
// merge "g h" (id 9), and the given normalizer, pre-tokenizer and added tokens.
std::string Json(const std::string& normalizer, const std::string& pre_tokenizer = "null",
                 const std::string& added = "[]") {
  return R"({"version":"1.0","added_tokens":)" + added + R"(,"normalizer":)" + normalizer +
         R"(,"pre_tokenizer":)" + pre_tokenizer +
         R"(,"model":{"type":"BPE","vocab":{"a":0,"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,)" +
         R"("h":7," ":8,"gh":9},"merges":["g h"]}})";
}

std::string AddedToken(const std::string& content, bool normalized, bool lstrip = false) {
  return R"({"id":10,"content":")" + content + R"(","single_word":false,"lstrip":)" +
         (lstrip ? "true" : "false") + R"(,"rstrip":false,"normalized":)" +
         (normalized ? "true" : "false") + R"(,"special":false})";
}

StatusOr<std::unique_ptr<BpeTokenizer>> Load(const std::string& json) {
  return BpeTokenizer::FromHuggingFaceJson(json, "dir/tokenizer.json");
}

std::string LoadError(const std::string& json) {
  auto t = Load(json);
  EXPECT_FALSE(t.ok());
  return t.ok() ? "" : t.status().message();
}

std::string Replace(const std::string& regex, const std::string& content) {
  return R"({"type":"Replace","pattern":{"Regex":")" + regex + R"("},"content":")" + content +
         R"("})";
}

TEST(TokenizerBoundsTest, ChainedReplaceStepsStopAtTheGrowthCap) {
  // 40 steps that each double the text made 64 bytes into terabytes (3 GB
  // before memory ran out).
  std::string steps;
  for (int i = 0; i < 40; ++i) steps += (i ? "," : "") + Replace("(?s).", "aa");
  auto t = Load(Json(R"({"type":"Sequence","normalizers":[)" + steps + "]}"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Ids ids;
  const Status st = (*t)->Encode(std::string(64, 'a'), &ids);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(st.message(),
            "normalizer step normalizer.normalizers[10] (Replace) made more than 65792 bytes of a "
            "64-byte text, past the cap of 4 times the text plus 64 KiB");
}

TEST(TokenizerBoundsTest, DenseNfkcExpansionIsRefusedAndSparseIsFine) {
  auto t = Load(Json(R"({"type":"NFKC"})"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // U+FDFA (3 bytes) is 33 bytes in NFKC: a text of nothing else grows 11x.
  const std::string fdfa = "\xEF\xB7\xBA";
  std::string dense;
  for (int i = 0; i < 200000; ++i) dense += fdfa;
  Ids ids;
  const Status st = (*t)->Encode(dense, &ids);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("normalizer step normalizer (NFKC) made more than 2465536 bytes of "
                              "a 600000-byte text"),
            std::string::npos)
      << st.message();
  // Within the slack, or among other text, it is a character like others.
  EXPECT_TRUE((*t)->Encode("ab " + fdfa + " cd", &ids).ok());
  std::string sparse;
  for (int i = 0; i < 100000; ++i) sparse += "abcdefgh" + std::string(i % 50 ? "" : fdfa);
  EXPECT_TRUE((*t)->Encode(sparse, &ids).ok());
}

// utf8proc's form of all of `text` at once.
std::string WholeForm(const std::string& text, int options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &out,
                   static_cast<utf8proc_option_t>(UTF8PROC_STABLE | options));
  EXPECT_GE(n, 0);
  std::string result(reinterpret_cast<const char*>(out), n < 0 ? 0 : static_cast<size_t>(n));
  std::free(out);
  return result;
}

std::string Utf8(const std::vector<uint32_t>& cps) {
  std::string out;
  for (uint32_t cp : cps) {
    utf8proc_uint8_t buf[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
  }
  return out;
}

TEST(TokenizerBoundsTest, LongRunsWithoutAsciiAreNormalizedInPiecesAlike) {
  // A text without ASCII is cut into ~1 MiB pieces where no form looks
  // across (before a starter that composes with nothing before it), so that
  // utf8proc's 4 bytes per code point are held for a piece, not the text.
  // Every form of the whole must be the forms of the pieces joined, for runs
  // of units that compose or reorder across characters (a cut inside any
  // would show) and for a random mix of them with compatibility forms.
  const std::vector<std::vector<uint32_t>> units = {
      {0x304B, 0x3099},          // KA + voiced mark (a non-starter): GA.
      {0x1100, 0x1161, 0x11A8},  // Hangul L V T: one syllable.
      {0x0B47, 0x0B3E},          // Two starters that compose (Oriya O).
      {0x1B05, 0x1B35},          // Balinese, likewise.
      {0x0391, 0x0345, 0x0301},  // Marks reordered by combining class.
      {0xFB01, 0x0301},          // fi ligature + acute: f, i-acute in NFKC.
  };
  // Each run starts at each of its unit's characters, so that the cut, just
  // past 1 MiB, is tried before each of them.
  const size_t size = (size_t{1} << 20) + 4096;
  std::vector<std::string> texts;
  for (const auto& unit : units) {
    for (size_t first = 0; first < unit.size(); ++first) {
      std::string text = Utf8(std::vector<uint32_t>(unit.begin() + first, unit.end()));
      const std::string one = Utf8(unit);
      while (text.size() < size) text += one;
      texts.push_back(text);
    }
  }
  std::mt19937 rng(11);
  std::string mix;
  while (mix.size() < 2 * size) {
    const auto& unit = units[rng() % units.size()];
    mix += Utf8(
        {unit[rng() % unit.size()], static_cast<uint32_t>(0x4E00 + rng() % 64), 0xFB01, 0x3300});
  }
  texts.push_back(mix);
  const std::pair<Normalizer::Form, int> forms[] = {
      {Normalizer::Form::kNfc, UTF8PROC_COMPOSE},
      {Normalizer::Form::kNfd, UTF8PROC_DECOMPOSE},
      {Normalizer::Form::kNfkc, UTF8PROC_COMPOSE | UTF8PROC_COMPAT},
      {Normalizer::Form::kNfkd, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT}};
  for (size_t i = 0; i < texts.size(); ++i) {
    for (const auto& [form, options] : forms) {
      Normalizer n;
      n.AddUnicodeForm(form, "test");
      std::string out;
      ASSERT_TRUE(n.Apply(texts[i], &out).ok());
      EXPECT_TRUE(out == WholeForm(texts[i], options)) << "text " << i << ", form " << options;
    }
  }
}

TEST(TokenizerBoundsTest, AddedTokensAreCappedNamingTheToken) {
  const std::string big(kMaxAddedTokenBytes + 1, 'a');
  EXPECT_EQ(LoadError(Json("null", "null",
                           "[" + AddedToken("ab", false) + "," + AddedToken(big, false) + "]")),
            "dir/tokenizer.json: added_tokens[1].content: is 16385 bytes, more than the 16384 "
            "an added token may have");
  // Many that are each allowed but too many bytes together.
  std::string many = "[";
  const std::string piece(kMaxAddedTokenBytes - 4, 'b');
  const size_t count = kMaxAddedTokensBytes / kMaxAddedTokenBytes + 1;
  for (size_t i = 0; i < count; ++i) {
    char number[8];
    std::snprintf(number, sizeof(number), "%04zu", i);  // Each the largest allowed.
    many += (i ? "," : "") + AddedToken(piece + number, false);
  }
  EXPECT_NE(LoadError(Json("null", "null", many + "]"))
                .find("added_tokens[256].content: takes the added tokens' contents past 4194304 "
                      "bytes in all"),
            std::string::npos);
}

TEST(TokenizerBoundsTest, AnAddedTokenTheNormalizerEmptiesIsRefused) {
  // tokenizers matches the empty string at every position then: "gh" in the
  // text is cut into g, h (ids 6, 7, not the merge 9), and with lstrip a
  // space becomes the added token. tokpack refuses the file instead.
  const std::string normalizer = Replace("abc", "");
  for (bool lstrip : {false, true}) {
    EXPECT_EQ(LoadError(Json(normalizer, "null", "[" + AddedToken("abc", true, lstrip) + "]")),
              "dir/tokenizer.json: added_tokens[0]: the normalizer makes 'abc' (normalized: true) "
              "empty, which tokenizers matches between every two characters; tokpack refuses it");
  }
  // Not normalized, it is matched in the raw text as tokenizers does.
  auto t = Load(Json(normalizer, "null", "[" + AddedToken("abc", false) + "]"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Ids ids;
  ASSERT_TRUE((*t)->Encode("ghabcgh", &ids).ok());
  EXPECT_EQ(ids, Ids({9, 10, 9}));
}

TEST(TokenizerBoundsTest, Pcre2OnlySyntaxIsRefusedNamingTheComponent) {
  const std::string split =
      R"({"type":"Sequence","pretokenizers":[{"type":"Digits"},{"type":"Split","pattern":)"
      R"({"Regex":"(*LIMIT_MATCH=1)a"},"behavior":"Isolated","invert":false}]})";
  EXPECT_EQ(LoadError(Json("null", split)),
            "dir/tokenizer.json: pre_tokenizer.pretokenizers[1].pattern: regex "
            "'(*LIMIT_MATCH=1)a' uses the verb '(*LIMIT_MATCH=1)', which only PCRE2 has: "
            "tokenizers' Oniguruma and tiktoken's fancy-regex refuse it");
}

TEST(TokenizerBoundsTest, ASplitPatternThatBacktracksWithoutEndFailsTheText) {
  const std::string split =
      R"({"type":"Split","pattern":{"Regex":"(a+)+$"},"behavior":"Isolated","invert":false})";
  auto t = Load(Json("null", split));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Ids ids;
  EXPECT_TRUE((*t)->Encode("aaab", &ids).ok());
  const Status st = (*t)->Encode(std::string(40, 'a') + "b", &ids);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("regex '(a+)+$' gave up on a 41-byte text"), std::string::npos);
}

TEST(TokenizerBoundsTest, ErrorsQuoteAtMostAHeadOfAUserString) {
  // A 300 MB EOS name was echoed whole into the error.
  testing::TempDir dir;
  const std::string path = dir.Join("tokenizer.json");
  testing::WriteStringToFile(path, Json("null"));
  TokenizerOptions o;
  o.eos_token = std::string(size_t{32} << 20, 'x');
  auto t = Tokenizer::Load(path, o);
  ASSERT_FALSE(t.ok());
  EXPECT_LT(t.status().message().size(), 600u);
  EXPECT_NE(t.status().message().find("... (33554432 bytes)' to use as EOS"), std::string::npos)
      << t.status().message().substr(0, 600);
}

}  // namespace
}  // namespace tokpack
