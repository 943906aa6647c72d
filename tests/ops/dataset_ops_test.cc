#include "tokpack/dataset_ops.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/test_util.h"
#include "tokpack/builder.h"

namespace tokpack {
namespace {

using testing::ReadFileOrDie;
using testing::TempDir;
using testing::WriteStringToFile;

class DatasetOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteStringToFile(dir_.Join("a.jsonl"), testing::MakeJsonl(300, 7));
    BuildOptions o;
    o.inputs = {dir_.Join("a.jsonl")};
    o.output = out_;
    o.tokenizer_model = testing::TestModelPath();
    o.chunk_bytes = 512;
    o.settings.shard_tokens = 3000;
    auto r = Build(o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    m_ = r->manifest;
  }
  bool HasProblem(const VerifyReport& r, const std::string& needle) {
    for (const auto& p : r.problems) {
      if (p.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  TempDir dir_;
  std::string out_ = dir_.Join("ds");
  Manifest m_;
};

TEST_F(DatasetOpsTest, VerifyPassesOnAFreshBuild) {
  auto r = VerifyDataset(out_, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok()) << r->problems[0];
  EXPECT_EQ(r->files_checked, 3 * m_.shards.size());  // .bin, .idx and .src.
}

TEST_F(DatasetOpsTest, VerifyFindsAFlippedBitAndNamesTheChunk) {
  const std::string bin = out_ + "/shard-00001.bin";
  std::string data = ReadFileOrDie(bin);
  data[700] ^= 0x01;
  WriteStringToFile(bin, data);
  auto r = VerifyDataset(out_, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(HasProblem(*r, "shard-00001.bin: chunk 1 (bytes 512..1024) checksum"))
      << (r->problems.empty() ? "" : r->problems[0]);
}

TEST_F(DatasetOpsTest, VerifyFindsTruncationMissingFilesAndBadIndexes) {
  ASSERT_EQ(::truncate((out_ + "/shard-00000.bin").c_str(), 10), 0);
  ASSERT_EQ(::unlink((out_ + "/shard-00001.idx").c_str()), 0);
  std::string idx = ReadFileOrDie(out_ + "/shard-00002.idx");
  idx[40] ^= 0x7f;
  WriteStringToFile(out_ + "/shard-00002.idx", idx);
  auto r = VerifyDataset(out_, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(HasProblem(*r, "shard-00000.bin: size 10 bytes"));
  EXPECT_TRUE(HasProblem(*r, "shard-00000.idx: describes"));
  EXPECT_TRUE(HasProblem(*r, "shard-00001.idx"));
  EXPECT_TRUE(HasProblem(*r, "shard-00002.idx: invalid Megatron index"));
}

TEST_F(DatasetOpsTest, VerifyFindsTokensOutsideTheVocabulary) {
  const std::string bin = out_ + "/shard-00000.bin";
  std::string data = ReadFileOrDie(bin);
  data[2] = static_cast<char>(0xff);
  data[3] = static_cast<char>(0xff);
  WriteStringToFile(bin, data);
  auto r = VerifyDataset(out_, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(HasProblem(*r, "token 1 is id 65535, outside the vocabulary of 500"));
}

TEST_F(DatasetOpsTest, VerifyOfAnIncompleteDirectoryFails) {
  ASSERT_EQ(::unlink((out_ + "/manifest.json").c_str()), 0);
  EXPECT_EQ(VerifyDataset(out_, StorageOptions()).status().code(), StatusCode::kNotFound);
}

TEST_F(DatasetOpsTest, ImportWrapsMegatronPairsWithoutCopying) {
  ImportOptions o;
  o.prefixes = {out_ + "/shard-00000", out_ + "/shard-00001.bin"};
  o.output = dir_.Join("imported");
  o.chunk_bytes = 512;
  auto m = ImportMegatron(o);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // A link in the output, not a path out of it: manifests name no "..".
  EXPECT_EQ(m->shards[0].path, "shard-00000");
  EXPECT_EQ(m->shards[1].bin, m_.shards[1].bin);
  EXPECT_EQ(m->TotalTokens(), m_.shards[0].tokens + m_.shards[1].tokens);
  EXPECT_EQ(m->tokenizer.vocab_size, -1);
  auto r = VerifyDataset(o.output, StorageOptions());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok());
  char target[256] = {};
  ASSERT_GT(::readlink((o.output + "/shard-00001.bin").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "../ds/shard-00001.bin");
}

TEST_F(DatasetOpsTest, ImportRefusesABinThatDisagreesWithItsIndex) {
  ASSERT_EQ(::truncate((out_ + "/shard-00000.bin").c_str(), 100), 0);
  ImportOptions o;
  o.prefixes = {out_ + "/shard-00000"};
  o.output = dir_.Join("imported");
  auto m = ImportMegatron(o);
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(m.status().message().find("shard-00000.bin: 100 bytes"), std::string::npos)
      << m.status().message();
  EXPECT_FALSE(testing::Exists(o.output));
}

TEST_F(DatasetOpsTest, InspectHistogramCoversEveryDocument) {
  auto ds = Dataset::Open(out_);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const DatasetInfo info = InspectDataset(**ds);
  uint64_t n = 0;
  for (uint64_t c : info.length_histogram) n += c;
  EXPECT_EQ(n, m_.TotalDocuments());
  EXPECT_GE(info.max_length, info.min_length);
  EXPECT_GT(info.min_length, 0u);
}

}  // namespace
}  // namespace tokpack
