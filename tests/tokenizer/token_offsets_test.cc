// Tokenizer::EncodeWithOffsets on each kind: the ids are exactly Encode()'s,
// and the ranges are each token's bytes in the text (tiktoken and byte-level
// tokenizer.json from the tokens' bytes; sentencepiece from its alignment of
// the normalized text), or an error where the tokens do not map back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/test_util.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokpack/tokenizer.h"

namespace tokpack {
namespace {

using testing::TempDir;
using testing::WriteStringToFile;

std::string Describe(std::string_view text, const std::vector<TokenRange>& ranges) {
  std::string out;
  for (const TokenRange& r : ranges) {
    out += "[" + std::string(text.substr(r.begin, r.end - r.begin)) + "]";
  }
  return out;
}

// Ids equal Encode's; every range lies in the text, in order.
void ExpectConsistent(const Tokenizer& t, std::string_view text, std::vector<int>* ids,
                      std::vector<TokenRange>* ranges) {
  std::vector<int> plain;
  ASSERT_TRUE(t.Encode(text, &plain).ok());
  Status s = t.EncodeWithOffsets(text, ids, ranges);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(*ids, plain);
  ASSERT_EQ(ranges->size(), ids->size());
  uint32_t at = 0;
  for (const TokenRange& r : *ranges) {
    EXPECT_LE(at, r.begin);
    EXPECT_LE(r.begin, r.end);
    EXPECT_LE(r.end, text.size());
    at = r.begin;
  }
}

TEST(TokenOffsetsTest, TiktokenRangesAreTheTokensBytes) {
  TempDir dir;
  WriteStringToFile(dir.Join("t.tiktoken"), testing::TiktokenRanks({"ab", "cd", " w", "or"}));
  TokenizerOptions o;
  o.pattern = "cl100k_base";
  auto t = Tokenizer::Load(dir.Join("t.tiktoken"), o);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::string text = "abcd \xC3\xA9 world<|endoftext|>\xF0\x9F\x99\x82";
  std::vector<int> ids;
  std::vector<TokenRange> ranges;
  ExpectConsistent(**t, text, &ids, &ranges);
  // Contiguous and covering: the tokens' bytes spell the text.
  EXPECT_EQ(Describe(text, ranges),
            "[ab][cd][ ][\xC3][\xA9][ w][or][l][d][<][|][e][n][d][o][f][t][e][x][t][|][>]"
            "[\xF0][\x9F][\x99][\x82]");
}

// A byte-level tokenizer.json: byte stand-ins, merges, and an added token
// matched in the original text.
std::string ByteLevelJson(const std::string& normalizer) {
  auto stand_in = [](std::string_view raw) {
    std::string s;
    for (char c : raw) {
      const uint32_t cp = ByteLevelCodepoint(static_cast<unsigned char>(c));
      if (cp < 0x80) {
        if (cp == '"' || cp == '\\') s += '\\';
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    return s;
  };
  std::string vocab = "{";
  for (int b = 0; b < 256; ++b) {
    vocab +=
        "\"" + stand_in(std::string(1, static_cast<char>(b))) + "\":" + std::to_string(b) + ",";
  }
  vocab += "\"" + stand_in("he") + "\":256,\"" + stand_in(" he") + "\":257}";
  return R"({"version":"1.0","added_tokens":[{"id":300,"content":"<|im_end|>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],"normalizer":)" +
         normalizer +
         R"(,"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},"post_processor":null,"decoder":null,"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"vocab":)" +
         vocab + R"(,"merges":[")" + stand_in("h") + " " + stand_in("e") + R"(",")" +
         stand_in(" ") + " " + stand_in("he") + R"("]}})";
}

TEST(TokenOffsetsTest, ByteLevelTokenizerJsonWithAddedTokens) {
  TempDir dir;
  WriteStringToFile(dir.Join("tokenizer.json"), ByteLevelJson("null"));
  auto t = Tokenizer::Load(dir.Join("tokenizer.json"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const std::string text = "he he<|im_end|>\xE6\x9D\xB1";
  std::vector<int> ids;
  std::vector<TokenRange> ranges;
  ExpectConsistent(**t, text, &ids, &ranges);
  EXPECT_EQ(Describe(text, ranges), "[he][ he][<|im_end|>][\xE6][\x9D][\xB1]");
  // tokenizers numbers an added token missing from the vocabulary after it.
  EXPECT_EQ(ids[2], 258);
}

TEST(TokenOffsetsTest, ANormalizerThatChangesTheTextIsRefused) {
  TempDir dir;
  WriteStringToFile(dir.Join("tokenizer.json"), ByteLevelJson(R"({"type":"NFKC"})"));
  auto t = Tokenizer::Load(dir.Join("tokenizer.json"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::vector<int> ids;
  std::vector<TokenRange> ranges;
  // Text NFKC leaves alone maps back exactly...
  ExpectConsistent(**t, "he he", &ids, &ranges);
  EXPECT_EQ(Describe("he he", ranges), "[he][ he]");
  // ...text it changes (the ligature "ﬁ" becomes "fi") is refused, never guessed.
  Status s = (*t)->EncodeWithOffsets("he \xEF\xAC\x81", &ids, &ranges);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("do not spell the text at byte 3"), std::string::npos) << s.message();
}

TEST(TokenOffsetsTest, SentencepieceMapsItsNormalizationBack) {
  auto t = Tokenizer::Load(testing::TestModelPath());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // NFKC (the full-width letters), the dummy prefix, the escaped spaces and
  // the runs of spaces sentencepiece removes.
  const std::string text = "the  model \xEF\xBD\x94he data";
  std::vector<int> ids;
  std::vector<TokenRange> ranges;
  ExpectConsistent(**t, text, &ids, &ranges);
  // Each piece's range holds the original text it came from: the pieces'
  // non-space text, in order, is the text's without spaces, and a
  // full-width "ｔ" stands where its piece's "t" does.
  std::string joined;
  for (const TokenRange& r : ranges) {
    for (char c : text.substr(r.begin, r.end - r.begin)) {
      if (c != ' ') joined += c;
    }
  }
  EXPECT_EQ(joined, "themodel\xEF\xBD\x94hedata");
  EXPECT_EQ(ranges.front().begin, 0u);
  EXPECT_EQ(ranges.back().end, text.size());
}

}  // namespace
}  // namespace tokpack
