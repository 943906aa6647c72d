// tiktoken ranks files: parsing, encode_ordinary semantics, errors.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokpack/tokenizer.h"

namespace tokpack {
namespace {

using Ids = std::vector<int>;

std::string Base64(std::string_view in) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    for (int k = 18; k >= 6; k -= 6) out += kAlphabet[(v >> k) & 63];
    out += "=";
  }
  return out;
}

// Ranks: every byte at its value, then `extra` from 256 up.
std::string Ranks(const std::vector<std::string>& extra) {
  std::string out;
  for (int b = 0; b < 256; ++b) {
    out += Base64(std::string(1, static_cast<char>(b))) + " " + std::to_string(b) + "\n";
  }
  for (size_t i = 0; i < extra.size(); ++i) {
    out += Base64(extra[i]) + " " + std::to_string(256 + i) + "\n";
  }
  return out;
}

std::unique_ptr<BpeTokenizer> Load(const std::vector<std::string>& extra,
                                   std::string pattern = "cl100k_base") {
  TiktokenOptions options;
  options.pattern = std::move(pattern);
  options.special_tokens = {{"<|endoftext|>", 1000}, {"<|fim|>", 1003}};
  auto t = BpeTokenizer::FromTiktoken(Ranks(extra), options, "test.tiktoken");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

Ids Encode(const BpeTokenizer& t, std::string_view text) {
  Ids ids;
  Status st = t.Encode(text, &ids);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return ids;
}

TEST(TiktokenTest, RankOfConcatenationDecidesEachMerge) {
  // "abcd" has a rank but "abc" and "bcd" do not: tiktoken still reaches it
  // through ab + cd, the pair whose concatenation has a rank.
  auto t = Load({"ab", "cd", "abcd", "Hello", " world"});
  EXPECT_EQ(Encode(*t, "abcde"), Ids({258, 'e'}));
  EXPECT_EQ(Encode(*t, "abcd"), Ids({258}));  // A whole piece that is a token.
  EXPECT_EQ(Encode(*t, "Hello world"), Ids({259, 260}));
  EXPECT_EQ(Encode(*t, "Hello  world"), Ids({259, ' ', 260}));
  EXPECT_EQ(*t->Decode(Encode(*t, "Hello\r\n\xF0\x9F\x98\x80 w\xC3\xB6rld 123")),
            "Hello\r\n\xF0\x9F\x98\x80 w\xC3\xB6rld 123");
}

TEST(TiktokenTest, SpecialTokensAreOrdinaryTextWhenEncoding) {
  auto t = Load({});
  Ids ids = Encode(*t, "<|endoftext|>");
  EXPECT_EQ(ids.size(), 13u);
  EXPECT_EQ(t->TokenId("<|endoftext|>"), 1000);
  EXPECT_EQ(t->TokenId("a"), 'a');
  EXPECT_EQ(t->TokenId("zz"), -1);
  EXPECT_EQ(*t->Decode({'a', 1000, 1003}), "a<|endoftext|><|fim|>");
  EXPECT_EQ(t->vocab_size(), 1004);
  EXPECT_FALSE(t->Decode({1001}).ok());
  ASSERT_EQ(t->added_tokens().size(), 2u);
  EXPECT_EQ(t->added_tokens()[1].content, "<|fim|>");
}

TEST(TiktokenTest, TextOutsideThePatternIsDropped) {
  // encode_ordinary keeps only the matches.
  auto t = Load({}, "[a-z]+");
  EXPECT_EQ(Encode(*t, "ab, c!"), Ids({'a', 'b', 'c'}));
}

TEST(TiktokenTest, MalformedRanksNameFileLineAndColumn) {
  TiktokenOptions options;
  options.pattern = "gpt2";
  auto t = BpeTokenizer::FromTiktoken("YQ== 0\nYW$j 1\n", options, "r.tiktoken");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "r.tiktoken: line 2, column 3 (byte 9): invalid base64 'YW$j'");
  t = BpeTokenizer::FromTiktoken("YQ== 3000000000\n", options, "r.tiktoken");
  EXPECT_EQ(t.status().message(),
            "r.tiktoken: line 1: rank '3000000000' is not a token id in [0, 16777215]");
  t = BpeTokenizer::FromTiktoken("YQ== 0\nYg== 0\n", options, "r.tiktoken");
  EXPECT_EQ(t.status().message(), "r.tiktoken: line 2: rank 0 appears twice");
  t = BpeTokenizer::FromTiktoken("YQ==\n", options, "r.tiktoken");
  EXPECT_NE(t.status().message().find("expected 'base64 rank'"), std::string::npos);
  options.pattern = "(unclosed";
  t = BpeTokenizer::FromTiktoken("YQ== 0\n", options, "r.tiktoken");
  EXPECT_NE(t.status().message().find("does not compile"), std::string::npos);
  options.pattern = "gpt2";
  t = BpeTokenizer::FromTiktoken("YQ== 0\n", options, "r.tiktoken");
  ASSERT_TRUE(t.ok());
  Ids ids;
  EXPECT_NE((*t)->Encode("b", &ids).message().find("no rank for byte 0x62"), std::string::npos);
}

TEST(TiktokenTest, LongPieceIsNotQuadratic) {
  // 1 MiB of 'a' is one piece for o200k's pattern.
  auto t = Load({"aa", "aaaa", "aaaaaaaa"}, "o200k_base");
  const size_t n = size_t{1} << 20;
  uint64_t before = BpeTokenizer::MergeStepsForTesting();
  Ids ids = Encode(*t, std::string(n, 'a'));
  EXPECT_EQ(ids, Ids(n / 8, 258));
  EXPECT_LT(BpeTokenizer::MergeStepsForTesting() - before, 4 * n);
}

// "a" * n in base64, n a multiple of 3.
std::string Base64Run(size_t n) {
  std::string out;
  for (size_t i = 0; i < n / 3; ++i) out += "YWFh";
  return out;
}

TEST(TiktokenTest, ALongTokenLoadsInLinearTime) {
  // A 420 KB token took seconds (4.2 s here, 10.7 s in the report): each of
  // its cuts hashed both halves. Now milliseconds (a second under sanitizers).
  TiktokenOptions options;
  options.pattern = "gpt2";
  const auto start = std::chrono::steady_clock::now();
  auto t =
      BpeTokenizer::FromTiktoken("YQ== 0\n" + Base64Run(420000) + " 1\n", options, "l.tiktoken");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
  EXPECT_EQ((*t)->TokenId(std::string(420000, 'a')), 1);
}

TEST(TiktokenTest, AVocabularyOfRunsIsRefusedForItsPairs) {
  // "aaa", "aaaaaa", ...: a pair per 3 bytes, 125,000 pairs for 500 tokens,
  // where real vocabularies have about 2 per token.
  std::string ranks = "YQ== 0\n";
  for (size_t n = 3; n <= 1500; n += 3) ranks += Base64Run(n) + " " + std::to_string(n) + "\n";
  TiktokenOptions options;
  options.pattern = "gpt2";
  auto t = BpeTokenizer::FromTiktoken(ranks, options, "runs.tiktoken");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "runs.tiktoken: its 501 tokens split into more than 73552 pairs of tokens (16 per "
            "token, where real vocabularies have about 2): a merge table that large is refused");
}

// Writes `bytes` to a file and loads it as a tokenizer of whatever kind its
// content says.
Ids LoadAndEncode(const std::string& bytes, std::string_view text) {
  testing::TempDir dir;
  const std::string path = dir.Join("r.tiktoken");
  testing::WriteStringToFile(path, bytes);
  TokenizerOptions o;
  o.pattern = "gpt2";
  auto t = Tokenizer::Load(path, o);
  Ids ids;
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  if (!t.ok()) return ids;
  EXPECT_EQ((*t)->info().type, "tiktoken");
  Status st = (*t)->Encode(text, &ids);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return ids;
}

std::string WithCrlf(const std::string& lf) {
  std::string out;
  for (char c : lf) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
  return out;
}

constexpr std::string_view kText = "abcd ab x abc Hello world\r\n";

TEST(TiktokenTest, CrlfRanksFileGivesTheIdsOfTheLfFile) {
  // tiktoken's load_tiktoken_bpe splits lines, so a '\r' before '\n' is not
  // part of the rank; the first line decided the kind and had it there.
  const std::string lf = testing::TiktokenRanks({"ab", "abc", "abcd", "Hello", " world"});
  const Ids want = LoadAndEncode(lf, kText);
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(LoadAndEncode(WithCrlf(lf), kText), want);
}

TEST(TiktokenTest, BlankLinesBeforeRanksAreSkippedAsTiktokenDoes) {
  // tiktoken keeps only the non-empty lines; a leading '\n' (0x0a, the tag a
  // sentencepiece model starts with) made the file a "bad sentencepiece model".
  const std::string lf = testing::TiktokenRanks({"ab", "abc", "abcd", "Hello", " world"});
  const Ids want = LoadAndEncode(lf, kText);
  EXPECT_EQ(LoadAndEncode("\n" + lf, kText), want);
  EXPECT_EQ(LoadAndEncode("\n\n" + lf + "\n", kText), want);
  EXPECT_EQ(LoadAndEncode("\r\n" + WithCrlf(lf), kText), want);
}

TEST(TiktokenTest, ConcurrentEncodesAgree) {
  auto t = Load({"ab", "cd", "abcd", "Hello", " world", "he", "ll"});
  std::vector<std::string> texts;
  for (int i = 0; i < 50; ++i) {
    texts.push_back("Hello world " + std::to_string(i * 7919) + " abcdab cd\n\t" +
                    std::string(static_cast<size_t>(i), 'l') + " h\xC3\xA9llo");
  }
  std::vector<Ids> want;
  for (const auto& text : texts) want.push_back(Encode(*t, text));
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      Ids ids;
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          if (!t->Encode(texts[i], &ids).ok() || ids != want[i]) ++bad[k];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace tokpack
