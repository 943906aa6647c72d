#include "tokpack/manifest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <filesystem>

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
  EXPECT_NE(s.message().find("field 'shards[0].path' ('/etc/passwd') is absolute"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(Manifest::Parse(good.substr(0, good.size() / 2), "m").ok());
  EXPECT_FALSE(Manifest::Parse("[]", "m").ok());
}

// Paths are not covered by the fingerprint, so a hostile manifest can hold
// any: each one is checked by CheckDatasetPath, the error naming the field.
Status ParseWith(const Manifest& m) { return Manifest::Parse(m.ToJson(), "m.json").status(); }

TEST(Manifest, ShardPathsStayInsideTheDataset) {
  for (const char* bad :
       {"../other/shard-00000", "a/../../b", "/abs", "./shard", "a//b", "a\\b", "g/"}) {
    Manifest m = Sample();
    m.shards[0].path = bad;
    Status s = ParseWith(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("m.json: field 'shards[0].path'"), std::string::npos) << s.message();
  }
  Manifest m = Sample();
  m.shards[0].path = std::string("shard\0x", 7);
  EXPECT_NE(ParseWith(m).message().find("\\x00"), std::string::npos) << ParseWith(m).message();
  m.shards[0].path = "g-1a2b/shard-00000";  // A generation prefix.
  EXPECT_TRUE(ParseWith(m).ok()) << ParseWith(m).message();
}

TEST(Manifest, TokenizerFileStaysInsideTheDataset) {
  for (const char* bad : {"../../victim", "/dev/zero", "..", "a/../../b", "x\n"}) {
    Manifest m = Sample();
    m.tokenizer.file = bad;
    Status s = ParseWith(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("field 'tokenizer.file'"), std::string::npos) << s.message();
  }
  Manifest none = Sample();
  none.tokenizer.file = "";  // No copy: allowed.
  EXPECT_TRUE(ParseWith(none).ok());
}

TEST(Manifest, TokenizerCopyMustCarryItsHash) {
  Manifest m = Sample();
  m.tokenizer.model_xxh3 = 0;
  Status s = ParseWith(m);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("field 'tokenizer.xxh3_64' is 0000000000000000"), std::string::npos)
      << s.message();
  m.tokenizer.file = "";  // Unknown tokenizer, no copy (an import without one).
  EXPECT_TRUE(ParseWith(m).ok());
}

TEST(Manifest, ChunkBytesIsWithinItsRange) {
  // Near 2^64 the chunk count used to wrap to 0: no checksums to check.
  Manifest m = Sample();
  m.chunk_bytes = UINT64_MAX;
  m.shards[0].bin.chunk_xxh3.clear();
  m.shards[0].idx.chunk_xxh3.clear();
  Status s = ParseWith(m);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("chunk_bytes 18446744073709551615 is not in 1..1073741824"),
            std::string::npos)
      << s.message();
  m.chunk_bytes = Manifest::kMaxChunkBytes + 1;
  m.shards[0].bin.chunk_xxh3 = {1};
  m.shards[0].idx.chunk_xxh3 = {2};
  EXPECT_FALSE(ParseWith(m).ok());
  m.chunk_bytes = Manifest::kMaxChunkBytes;
  EXPECT_TRUE(ParseWith(m).ok()) << ParseWith(m).message();
  m.chunk_bytes = 0;
  EXPECT_FALSE(ParseWith(m).ok());
  EXPECT_FALSE(CheckChunkBytes(0).ok());
  EXPECT_TRUE(CheckChunkBytes(Manifest::kDefaultChunkBytes).ok());
}

TEST(Manifest, CountsThatOverflowAreRefused) {
  // tokens x 2 wraps to the 20 bytes the .bin claims.
  Manifest m = Sample();
  m.shards[0].tokens = (uint64_t{1} << 63) + 10;
  Status s = ParseWith(m);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("shards[0] has 9223372036854775818 tokens but bin.bytes 20"),
            std::string::npos)
      << s.message();
  // 34 + 12 x documents + 8 wraps below the 82 bytes the .idx claims.
  m = Sample();
  m.shards[0].documents = 0x1555555555555556;
  s = ParseWith(m);
  EXPECT_NE(s.message().find("documents but idx.bytes 82"), std::string::npos) << s.message();
}

TEST(Manifest, LoadRefusesAManifestThatIsNotARegularFile) {
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.Join("manifest.json").c_str(), 0600), 0);
  auto m = Manifest::Load(dir.path());  // Blocked forever on the FIFO before.
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("is a FIFO"), std::string::npos) << m.status().message();
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
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
  }
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
