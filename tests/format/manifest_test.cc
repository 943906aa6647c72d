#include "tokpack/manifest.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace tokpack {
namespace {

Manifest Sample() {
  Manifest m;
  m.chunk_bytes = 16;
  m.tokenizer.type = "sentencepiece";
  m.tokenizer.file = "tokenizer.model";
  m.tokenizer.model_xxh3 = 0xfeedbeefULL;
  m.tokenizer.vocab_size = 500;
  m.tokenizer.eos_id = 2;
  ShardInfo s;
  s.path = "shard-00000";
  s.tokens = 10;
  s.documents = 2;
  s.bin = {20, {1, 2}};
  s.idx = {34 + 40 + 8, {3, 4, 5, 6, 7, 8}};
  m.shards.push_back(s);
  m.provenance.version = "0.1.0";
  m.provenance.kind = "build";
  m.provenance.inputs = {{"a \"quoted\"\n.jsonl", 123}};
  m.provenance.counts.documents = 2;
  return m;
}

TEST(Manifest, JsonRoundTripPreservesEverything) {
  Manifest m = Sample();
  auto back = Manifest::Parse(m.ToJson(), "m.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), m.ToJson());
  EXPECT_EQ(back->shards[0].bin, m.shards[0].bin);
  EXPECT_EQ(back->provenance.inputs[0].path, "a \"quoted\"\n.jsonl");
  EXPECT_EQ(back->Fingerprint(), m.Fingerprint());
}

TEST(Manifest, NonUtf8FileNamesStillMakeValidJson) {
  Manifest m = Sample();
  m.provenance.inputs = {{"corpus/caf\xe9.jsonl", 1}};
  auto back = Manifest::Parse(m.ToJson(), "m.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->provenance.inputs[0].path, "corpus/caf\xef\xbf\xbd.jsonl");
}

TEST(Manifest, DtypeNameMustAgreeWithItsCode) {
  std::string json = Sample().ToJson();
  json.replace(json.find("\"uint16\""), 8, "\"int32\"");
  auto m = Manifest::Parse(json, "m.json");
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("contradicts dtype_code"), std::string::npos);
}

TEST(Manifest, FingerprintDependsOnContentNotProvenance) {
  Manifest a = Sample(), b = Sample();
  b.provenance.inputs.clear();
  b.shards[0].path = "elsewhere/shard-00000";
  EXPECT_EQ(a.Fingerprint(), b.Fingerprint());
  b.shards[0].bin.chunk_xxh3[1] ^= 1;
  EXPECT_NE(a.Fingerprint(), b.Fingerprint());
}

TEST(Manifest, EditedContentFailsTheFingerprintCheck) {
  std::string json = Sample().ToJson();
  size_t at = json.find("\"0000000000000002\"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 18, "\"0000000000000009\"");
  auto m = Manifest::Parse(json, "m.json");
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("fingerprint"), std::string::npos);
}

TEST(Manifest, MalformedManifestsNameTheProblem) {
  const std::string good = Sample().ToJson();
  auto field_error = [&](const std::string& from, const std::string& to) {
    std::string j = good;
    size_t at = j.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    j.replace(at, from.size(), to);
    return Manifest::Parse(j, "dir/manifest.json").status();
  };
  Status s = field_error("\"tokens\": 10", "\"tokens\": \"ten\"");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shards[0].tokens"), std::string::npos) << s.message();
  s = field_error("\"format_version\": 1", "\"format_version\": 99");
  EXPECT_NE(s.message().find("format_version 99"), std::string::npos) << s.message();
  s = field_error("\"dtype_code\": 8", "\"dtype_code\": 5");
  EXPECT_NE(s.message().find("dtype_code"), std::string::npos) << s.message();
  s = field_error("\"path\": \"shard-00000\"", "\"path\": \"/etc/passwd\"");
  EXPECT_NE(s.message().find("relative"), std::string::npos) << s.message();
  EXPECT_FALSE(Manifest::Parse(good.substr(0, good.size() / 2), "m").ok());
  EXPECT_FALSE(Manifest::Parse("[]", "m").ok());
}

TEST(Manifest, LoadOfDirectoryWithoutManifestSaysSo) {
  testing::TempDir dir;
  auto m = Manifest::Load(dir.path());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("no manifest.json"), std::string::npos);
}

TEST(Manifest, SaveIsAtomicAndLoadable) {
  testing::TempDir dir;
  ASSERT_TRUE(Sample().Save(dir.path()).ok());
  EXPECT_FALSE(testing::Exists(dir.Join("manifest.json.tmp")));
  auto m = Manifest::Load(dir.path());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->TotalTokens(), 10u);
}

TEST(TokenDtype, ChosenByVocabularySize) {
  EXPECT_EQ(DtypeForVocab(32000), TokenDtype::kUInt16);
  EXPECT_EQ(DtypeForVocab(65535), TokenDtype::kUInt16);
  EXPECT_EQ(DtypeForVocab(65536), TokenDtype::kInt32);
  EXPECT_EQ(DtypeForVocab(128256), TokenDtype::kInt32);
}

}  // namespace
}  // namespace tokpack
