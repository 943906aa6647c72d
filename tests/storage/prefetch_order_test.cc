// The order of a remote dataset's fetches, as a real loopback server sees
// them: hints are fetched smallest step first, and a read that needs a
// chunk now goes ahead of every hint, also of the hint for that chunk. One
// prefetch thread, held on a first fetch that the server keeps unanswered
// until released, so every order here is the queue's, not a race's.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/reader/synthetic_dataset.h"
#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"

namespace tokpack {
namespace {

using testing::HttpTestServer;
using testing::TempDir;
using testing::TokenAt;

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.
constexpr uint64_t kChunkTokens = 128;         // 256-byte chunks of uint16 tokens.
constexpr uint64_t kSalt = 3;

class PrefetchOrderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One shard of a few thousand tokens: chunk k is "/d/shard-00000.bin@" k * 256.
    testing::WriteSyntheticDataset(root_.Join("d"), testing::CyclingLengths(120, 60), kSalt,
                                   /*shard_tokens=*/1 << 20);
    StorageOptions o;
    o.cache_dir = cache_.path();
    o.http_attempts = 2;
    o.prefetch_threads = 1;
    auto ds = Dataset::Open(server_.url() + "/d", o);
    ASSERT_TRUE(ds.ok()) << ds.status().ToString();
    ds_ = std::move(*ds);
    ASSERT_GE(ds_->num_tokens(), 8 * kChunkTokens);
  }
  // Hints chunk k for `step`.
  void Hint(uint64_t k, int64_t step) { ds_->Prefetch(k * kChunkTokens, 1, step, stats_); }
  // The .bin fetches the server has seen, once there are `n`.
  std::vector<std::string> Fetches(size_t n) { return server_.AwaitRanges(".bin", n, kDeadline); }
  static std::string Chunk(uint64_t k) { return "/d/shard-00000.bin@" + std::to_string(k * 256); }

  TempDir root_, cache_;
  HttpTestServer server_{root_.path()};
  std::shared_ptr<Dataset> ds_;
  std::shared_ptr<ReadStats> stats_ = std::make_shared<ReadStats>();
};

TEST_F(PrefetchOrderTest, HintsAreFetchedInTheOrderOfTheirSteps) {
  server_.Hold();
  Hint(0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk(0)}) << "the thread never started";
  Hint(1, 5);
  Hint(2, 3);
  Hint(3, 9);
  Hint(4, 9);
  Hint(4, 1);  // Needed sooner than first hinted: moves up.
  server_.Release();
  EXPECT_EQ(Fetches(5),
            (std::vector<std::string>{Chunk(0), Chunk(4), Chunk(2), Chunk(1), Chunk(3)}));
}

TEST_F(PrefetchOrderTest, AReadOfAQueuedChunkGoesAheadOfTheHints) {
  server_.Hold();
  Hint(0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk(0)}) << "the thread never started";
  Hint(1, 5);
  Hint(2, 6);
  // The prefetch thread is busy and chunk 2 waits behind chunk 1's hint; a
  // reader that needs chunk 2 fetches it now.
  std::vector<int64_t> got(kChunkTokens);
  Status read;
  std::thread reader([&] { read = ds_->ReadTokens(2 * kChunkTokens, kChunkTokens, got.data()); });
  EXPECT_EQ(Fetches(2), (std::vector<std::string>{Chunk(0), Chunk(2)}));
  server_.Release();
  reader.join();
  ASSERT_TRUE(read.ok()) << read.ToString();
  for (uint64_t i = 0; i < kChunkTokens; ++i) {
    ASSERT_EQ(got[i], TokenAt(2 * kChunkTokens + i, kSalt)) << i;
  }
  // The read took chunk 2's hint out of the queue: a hint for a later step
  // is fetched right after chunk 1, and the hints fetched nothing twice
  // and visited no cached chunk.
  Hint(5, 100);
  EXPECT_EQ(Fetches(4), (std::vector<std::string>{Chunk(0), Chunk(2), Chunk(1), Chunk(5)}));
  ds_.reset();  // Waits for the fetches in flight, so the counts are final.
  EXPECT_EQ(stats_->cache_misses.load(), 3u);
  EXPECT_EQ(stats_->cache_hits.load(), 0u);
}

TEST_F(PrefetchOrderTest, AReadOfAChunkBeingPrefetchedWaitsForThatFetch) {
  server_.Hold();
  Hint(3, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk(3)}) << "the thread never started";
  std::vector<int64_t> got(kChunkTokens);
  Status read;
  std::thread reader([&] { read = ds_->ReadTokens(3 * kChunkTokens, kChunkTokens, got.data()); });
  server_.Release();
  reader.join();
  ASSERT_TRUE(read.ok()) << read.ToString();
  EXPECT_EQ(got[0], TokenAt(3 * kChunkTokens, kSalt));
  Hint(6, 1);  // Comes after any second fetch of chunk 3.
  EXPECT_EQ(Fetches(2), (std::vector<std::string>{Chunk(3), Chunk(6)}));
}

TEST_F(PrefetchOrderTest, AChunkEvictedSinceItWasReadIsHintedAgain) {
  // A cache of 4 chunks (mappings: 2): reading 8 chunks evicts the first, so
  // in the next epoch its hint must fetch it again, not be skipped as seen.
  TempDir small;
  StorageOptions o;
  o.cache_dir = small.path();
  o.cache_bytes = 4 * 256;
  o.prefetch_threads = 1;
  auto ds = Dataset::Open(server_.url() + "/d", o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  std::vector<int64_t> got(kChunkTokens);
  for (uint64_t k = 0; k < 8; ++k) {
    ASSERT_TRUE((*ds)->ReadTokens(k * kChunkTokens, kChunkTokens, got.data()).ok());
  }
  ASSERT_EQ(Fetches(8).front(), Chunk(0));
  (*ds)->Prefetch(0, 1, /*step=*/100, stats_);
  EXPECT_EQ(Fetches(9).back(), Chunk(0));
}

TEST_F(PrefetchOrderTest, DestroyingTheDatasetWithHintsQueuedAndInFlight) {
  server_.Hold();
  Hint(0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk(0)}) << "the thread never started";
  for (uint64_t k = 1; k < 8; ++k) Hint(k, static_cast<int64_t>(k));
  std::thread destroyer([&] { ds_.reset(); });  // Drops the queue, waits for chunk 0.
  server_.Release();
  destroyer.join();
  EXPECT_EQ(stats_->cache_misses.load() + stats_->cache_hits.load(),
            server_.AwaitRanges(".bin", 1, kDeadline).size());
}

}  // namespace
}  // namespace tokpack
