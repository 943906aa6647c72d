#include "build/batch_encoder.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/test_util.h"

namespace tokpack {
namespace {

class BatchEncoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = Tokenizer::Load(testing::TestModelPath());
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    tok_ = std::move(*t);
  }
  RawBatch Batch(const std::vector<std::string>& records, RecordKind kind = RecordKind::kJsonLine,
                 bool seal = true) {
    RawBatch b;
    uint64_t line = 1;
    for (const auto& r : records) {
      b.data += r;
      b.records.push_back({static_cast<uint32_t>(b.data.size()), 0, line++, kind});
    }
    if (seal) b.Seal();
    return b;
  }
  std::vector<int> Ids(const std::string& text) {
    std::vector<int> ids;
    EXPECT_TRUE(tok_->Encode(text, &ids).ok());
    return ids;
  }
  std::unique_ptr<Tokenizer> tok_;
};

std::vector<uint16_t> AsU16(const std::string& bytes) {
  std::vector<uint16_t> v(bytes.size() / 2);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST_F(BatchEncoderTest, JsonRecordsBecomeSentencepieceIdsPlusEos) {
  BuildSettings s;
  BatchEncoder enc(tok_.get(), s, TokenDtype::kUInt16);
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(Batch({R"({"text": "hello world", "x": 1})",
                                R"({"x": 2, "text": "caf\u00e9 \"q\""})"}),
                         &out)
                  .ok());
  std::vector<uint16_t> want;
  for (const std::string& t : {std::string("hello world"), std::string("café \"q\"")}) {
    for (int id : Ids(t)) want.push_back(static_cast<uint16_t>(id));
    want.push_back(static_cast<uint16_t>(tok_->info().eos_id));
  }
  EXPECT_EQ(AsU16(out.tokens), want);
  EXPECT_EQ(out.doc_tokens.size(), 2u);
  EXPECT_TRUE(out.dropped.empty());
}

TEST_F(BatchEncoderTest, BadLinesAreReportedWithReasons) {
  BuildSettings s;
  BatchEncoder enc(tok_.get(), s, TokenDtype::kUInt16);
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(Batch({R"({"text": "ok"})", R"({"text": "unterminated)",
                                R"({"body": "no text key"})", R"({"text": 42})", R"([1, 2])",
                                R"({"text": ""})", R"({"text": "a"} trailing)"}),
                         &out)
                  .ok());
  ASSERT_EQ(out.doc_tokens.size(), 1u);
  ASSERT_EQ(out.dropped.size(), 6u);
  EXPECT_NE(out.dropped[0].message.find("malformed JSON"), std::string::npos);
  EXPECT_EQ(out.dropped[0].line, 2u);
  EXPECT_NE(out.dropped[1].message.find("missing text key 'text'"), std::string::npos);
  EXPECT_NE(out.dropped[2].message.find("not a string"), std::string::npos);
  EXPECT_NE(out.dropped[3].message.find("not an object"), std::string::npos);
  EXPECT_EQ(out.dropped[4].why, Drop::kEmpty);
  EXPECT_EQ(out.dropped[5].why, Drop::kBadLine);
}

TEST_F(BatchEncoderTest, JsonPointerTextKeyAndBos) {
  BuildSettings s;
  s.text_key = "/meta/body";
  s.add_bos = true;
  s.add_eos = false;
  BatchEncoder enc(tok_.get(), s, TokenDtype::kInt32);
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(Batch({R"({"meta": {"body": "the data"}})"}), &out).ok());
  std::vector<int> want = {static_cast<int>(tok_->info().bos_id)};
  for (int id : Ids("the data")) want.push_back(id);
  std::vector<int> got(out.tokens.size() / 4);
  std::memcpy(got.data(), out.tokens.data(), out.tokens.size());
  EXPECT_EQ(got, want);
}

TEST_F(BatchEncoderTest, InvalidUtf8PolicyReplaceSkipError) {
  const std::string bad = "{\"text\": \"caf\xe9 ok\"}";
  for (const char* policy : {"replace", "skip", "error"}) {
    BuildSettings s;
    s.invalid_utf8 = policy;
    BatchEncoder enc(tok_.get(), s, TokenDtype::kUInt16);
    EncodedBatch out;
    ASSERT_TRUE(enc.Encode(Batch({bad}), &out).ok());
    if (std::string(policy) == "replace") {
      EXPECT_EQ(out.utf8_repaired, 1u);
      ASSERT_EQ(out.doc_tokens.size(), 1u);
      EXPECT_EQ(out.doc_tokens[0], Ids("caf\xef\xbf\xbd ok").size() + 1);
    } else {
      ASSERT_EQ(out.dropped.size(), 1u);
      EXPECT_EQ(out.dropped[0].why,
                std::string(policy) == "skip" ? Drop::kInvalidUtf8 : Drop::kBadLine);
    }
  }
}

TEST_F(BatchEncoderTest, TextRecordsAreEncodedAsIsAndBadRecordsDropped) {
  BuildSettings s;
  BatchEncoder enc(tok_.get(), s, TokenDtype::kUInt16);
  RawBatch b = Batch({"{\"text\": \"x\"}"}, RecordKind::kText, /*seal=*/false);
  b.data += "text is null";
  b.records.push_back({static_cast<uint32_t>(b.data.size()), 0, 2, RecordKind::kBad});
  b.Seal();
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(b, &out).ok());
  ASSERT_EQ(out.doc_tokens.size(), 1u);
  EXPECT_EQ(out.doc_tokens[0], Ids("{\"text\": \"x\"}").size() + 1);
  ASSERT_EQ(out.dropped.size(), 1u);
  EXPECT_EQ(out.dropped[0].why, Drop::kBadLine);
  EXPECT_EQ(out.dropped[0].message, "text is null");
  EXPECT_EQ(out.dropped[0].line, 2u);
}

TEST_F(BatchEncoderTest, RecordsAreParsedInPlaceSoTheBatchMustBeSealed) {
  BuildSettings s;
  BatchEncoder enc(tok_.get(), s, TokenDtype::kUInt16);
  EncodedBatch out;
  EXPECT_EQ(enc.Encode(Batch({R"({"text": "x"})"}, RecordKind::kJsonLine, false), &out).code(),
            StatusCode::kInternal);
  // Padding bytes that are not spaces do not matter: a record ends at its end.
  RawBatch b = Batch({R"({"text": "x"})"}, RecordKind::kJsonLine, false);
  b.data.append(RawBatch::kPadding, '}');
  ASSERT_TRUE(enc.Encode(b, &out).ok());
  EXPECT_EQ(out.doc_tokens.size(), 1u);
  EXPECT_TRUE(out.dropped.empty());
}

// A tiktoken file of the 256 bytes plus merges of "ab", "abc" and "abcd".
StatusOr<std::unique_ptr<Tokenizer>> SmallTiktoken(const testing::TempDir& dir,
                                                   int missing_byte = -1) {
  const std::string path = dir.Join("small.tiktoken");
  testing::WriteStringToFile(path, testing::TiktokenRanks({"ab", "abc", "abcd"}, missing_byte));
  TokenizerOptions o;
  o.pattern = "gpt2";
  return Tokenizer::Load(path, o);
}

TEST_F(BatchEncoderTest, LongTextsStreamTheirIdsAndGetTheSameTokens) {
  testing::TempDir dir;
  auto bpe = SmallTiktoken(dir);
  ASSERT_TRUE(bpe.ok()) << bpe.status().ToString();
  // Over 16K ids per document (the tokenizer's run) and over the 8 MiB
  // after which the encoder frees its scratch.
  std::string text;
  while (text.size() < (9u << 20)) text += "abcd ab x abc ";
  std::vector<int> whole;
  ASSERT_TRUE((*bpe)->Encode(text, &whole).ok());
  ASSERT_GT(whole.size(), 16384u * 4);
  BuildSettings s;
  s.add_bos = false;
  s.add_eos = false;
  BatchEncoder enc(bpe->get(), s, TokenDtype::kInt32);
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(Batch({text, "abc"}, RecordKind::kText), &out).ok());
  ASSERT_EQ(out.doc_tokens.size(), 2u);
  EXPECT_EQ(out.doc_tokens[0], whole.size());
  std::vector<int> got(out.tokens.size() / 4);
  std::memcpy(got.data(), out.tokens.data(), out.tokens.size());
  got.resize(whole.size());
  EXPECT_EQ(got, whole);
}

TEST_F(BatchEncoderTest, ATokenizerFailureIsKeptWithItsRecordAndEndsTheBatch) {
  testing::TempDir dir;
  auto bpe = SmallTiktoken(dir, 'z');  // No rank for "z": encoding it fails.
  ASSERT_TRUE(bpe.ok()) << bpe.status().ToString();
  BuildSettings s;
  s.add_eos = false;
  BatchEncoder enc(bpe->get(), s, TokenDtype::kUInt16);
  EncodedBatch out;
  ASSERT_TRUE(enc.Encode(Batch({"abc", "ab z", "abcd"}, RecordKind::kText), &out).ok());
  EXPECT_EQ(out.doc_tokens.size(), 1u);
  EXPECT_EQ(out.tokens.size(), 2 * out.doc_tokens[0]);  // Nothing of the failed record.
  ASSERT_EQ(out.dropped.size(), 1u);
  EXPECT_EQ(out.dropped[0].why, Drop::kFailed);
  EXPECT_EQ(out.dropped[0].line, 2u);
  EXPECT_EQ(out.dropped[0].code, StatusCode::kInvalidArgument);
  EXPECT_NE(out.dropped[0].message.find("no rank for byte 0x7a"), std::string::npos);
}

}  // namespace
}  // namespace tokpack
