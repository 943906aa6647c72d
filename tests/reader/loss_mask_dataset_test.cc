// A Dataset's loss masks (docs/format.md 3.1): ReadLossMask across shards,
// on split views, through remote storage; damaged or missing mask files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/reader/synthetic_dataset.h"
#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

using testing::LossAt;
using testing::TempDir;
using testing::TokenAt;

constexpr uint64_t kSalt = 3;

// The stream offset of a token of the synthetic dataset (7^-1 = 17143 mod 60000).
uint64_t OffsetOf(int64_t token) {
  return (static_cast<uint64_t>(token + 60000 - kSalt) * 17143) % 60000;
}

void FlipByte(const std::string& path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char c = 0;
  f.read(&c, 1);
  c ^= 0x10;
  f.seekp(at);
  f.write(&c, 1);
}

class LossMaskDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Shards of at most 700 tokens: ranges straddle shards and mask bytes.
    manifest_ = testing::WriteMaskedSyntheticDataset(dir_.Join("ds"),
                                                     testing::CyclingLengths(400, 60), kSalt, 700);
    ASSERT_GT(manifest_.shards.size(), 5u);
  }
  static void ExpectMask(const Dataset& ds, uint64_t begin, uint64_t count) {
    std::vector<uint8_t> bits(count, 7);
    ASSERT_TRUE(ds.ReadLossMask(begin, count, bits.data()).ok());
    for (uint64_t i = 0; i < count; ++i) {
      ASSERT_EQ(bits[i], LossAt(begin + i, kSalt) ? 1 : 0) << begin + i;
    }
  }

  TempDir dir_;
  Manifest manifest_;
};

TEST_F(LossMaskDatasetTest, BitsMatchTheWrittenMaskAcrossShardsAndBytes) {
  auto ds = Dataset::Open(dir_.Join("ds"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_TRUE((*ds)->has_loss_masks());
  const uint64_t n = (*ds)->num_tokens();
  ExpectMask(**ds, 0, n);
  for (uint64_t begin : {1u, 7u, 9u, 690u, 701u}) {
    for (uint64_t count : {0u, 1u, 8u, 13u, 1500u}) ExpectMask(**ds, begin, count);
  }
  uint8_t bit = 0;
  EXPECT_EQ((*ds)->ReadLossMask(n, 1, &bit).code(), StatusCode::kOutOfRange);
  uint64_t trainable = 0;
  for (uint64_t t = 0; t < n; ++t) trainable += LossAt(t, kSalt);
  EXPECT_EQ((*ds)->manifest().TrainableTokens(), trainable);
}

TEST_F(LossMaskDatasetTest, ADatasetWithoutMasksTrainsEveryToken) {
  testing::WriteSyntheticDataset(dir_.Join("plain"), testing::CyclingLengths(50, 30), kSalt);
  auto ds = Dataset::Open(dir_.Join("plain"));
  ASSERT_TRUE(ds.ok());
  EXPECT_FALSE((*ds)->has_loss_masks());
  std::vector<uint8_t> bits(100, 0);
  ASSERT_TRUE((*ds)->ReadLossMask(5, bits.size(), bits.data()).ok());
  EXPECT_EQ(bits, std::vector<uint8_t>(100, 1));
}

TEST_F(LossMaskDatasetTest, SplitViewsKeepEachTokensBit) {
  uint64_t total_trainable = 0;
  for (int64_t part : {0, 1}) {
    DatasetOptions o;
    ASSERT_TRUE(o.Set("split", std::string("3,1")).ok());
    ASSERT_TRUE(o.Set("split_index", part).ok());
    auto view = Dataset::Open(dir_.Join("ds"), StorageOptions(), o);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    const uint64_t n = (*view)->num_tokens();
    std::vector<int64_t> tokens(n);
    std::vector<uint8_t> bits(n);
    ASSERT_TRUE((*view)->ReadTokens(0, n, tokens.data()).ok());
    ASSERT_TRUE((*view)->ReadLossMask(0, n, bits.data()).ok());
    uint64_t kept = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(bits[i], LossAt(OffsetOf(tokens[i]), kSalt) ? 1 : 0) << "part " << part << " " << i;
      kept += bits[i];
    }
    // Each range's trainable_tokens is its own.
    EXPECT_EQ((*view)->manifest().TrainableTokens(), kept) << part;
    total_trainable += kept;
  }
  EXPECT_EQ(total_trainable, manifest_.TrainableTokens());
}

TEST_F(LossMaskDatasetTest, AMissingOrTruncatedMaskIsRefusedAndAFlippedBitFoundByVerify) {
  const std::string mask = dir_.Join("ds/shard-00002.mask");
  std::filesystem::resize_file(mask, std::filesystem::file_size(mask) - 1);
  auto truncated = Dataset::Open(dir_.Join("ds"));
  ASSERT_EQ(truncated.status().code(), StatusCode::kDataLoss) << truncated.status().ToString();
  EXPECT_NE(truncated.status().message().find("shard-00002.mask"), std::string::npos);
  std::filesystem::remove(mask);
  EXPECT_EQ(Dataset::Open(dir_.Join("ds")).status().code(), StatusCode::kNotFound);

  testing::WriteMaskedSyntheticDataset(dir_.Join("ds2"), testing::CyclingLengths(400, 60), kSalt,
                                       700);
  FlipByte(dir_.Join("ds2/shard-00001.mask"), 10);
  ASSERT_TRUE(Dataset::Open(dir_.Join("ds2")).ok());  // Served as it is...
  DatasetOptions verify;
  ASSERT_TRUE(verify.Set("verify_on_open", true).ok());
  auto checked = Dataset::Open(dir_.Join("ds2"), StorageOptions(), verify);
  ASSERT_EQ(checked.status().code(), StatusCode::kDataLoss);  // ...unless verified.
  EXPECT_NE(checked.status().message().find("shard-00001.mask"), std::string::npos)
      << checked.status().ToString();
}

TEST_F(LossMaskDatasetTest, RemoteMasksAreReadThroughTheCheckedChunkCache) {
  TempDir cache;
  StorageOptions storage;
  storage.cache_dir = cache.path();
  storage.http_attempts = 3;
  testing::HttpTestServer server(dir_.path());
  auto remote = Dataset::Open(server.url() + "/ds", storage);
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  EXPECT_TRUE((*remote)->has_loss_masks());
  ExpectMask(**remote, 0, (*remote)->num_tokens());
  ExpectMask(**remote, 695, 20);

  // A loader over it serves the local loader's labels.
  LoaderOptions o;
  o.seq_len = 32;
  o.batch_size = 4;
  o.loss_mask = true;
  auto local = Loader::Create({{*Dataset::Open(dir_.Join("ds")), 1.0}}, o);
  auto far = Loader::Create({{*remote, 1.0}}, o);
  ASSERT_TRUE(local.ok() && far.ok()) << far.status().ToString();
  const size_t cells = 4 * 32;
  for (int step = 0; step < 10; ++step) {
    auto a = *(*local)->Next();
    auto b = *(*far)->Next();
    const auto* la = static_cast<const int64_t*>(a->targets());
    const auto* lb = static_cast<const int64_t*>(b->targets());
    EXPECT_EQ(std::vector<int64_t>(la, la + cells), std::vector<int64_t>(lb, lb + cells));
    EXPECT_EQ(std::vector<uint8_t>(a->loss_mask(), a->loss_mask() + cells),
              std::vector<uint8_t>(b->loss_mask(), b->loss_mask() + cells));
  }

  // A mask changed on the server after the manifest fails its chunk's check.
  TempDir cache2;
  storage.cache_dir = cache2.path();
  FlipByte(dir_.Join("ds/shard-00003.mask"), 3);
  auto damaged = Dataset::Open(server.url() + "/ds", storage);
  ASSERT_TRUE(damaged.ok());
  std::vector<uint8_t> bits((*damaged)->num_tokens());
  const Status s = (*damaged)->ReadLossMask(0, bits.size(), bits.data());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s.ToString();
  EXPECT_NE(s.message().find("shard-00003.mask"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace tokpack
