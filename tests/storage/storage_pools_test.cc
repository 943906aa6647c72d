// The prefetch pool and connections that remote datasets of one process
// share (StoragePools), seen through real datasets on a loopback server:
// one queue in step order across datasets, a bounded number of threads
// however many datasets are open, and a dataset that goes while its hints
// wait leaves the others' alone. One prefetch thread, held on a first fetch
// that the server keeps unanswered until released, so every order here is
// the queue's, not a race's.
#include "storage/storage_pools.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
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

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.
constexpr uint64_t kChunkTokens = 128;         // 256-byte chunks of uint16 tokens.

// This process's threads, and those named `name`.
int Threads(const std::string& name = "") {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] == '.') continue;
    std::string comm;
    std::ifstream(std::string("/proc/self/task/") + e->d_name + "/comm") >> comm;
    n += name.empty() || comm == name;
  }
  if (d) ::closedir(d);
  return n;
}

class StoragePoolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"a", "b"}) {
      testing::WriteSyntheticDataset(root_.Join(name), testing::CyclingLengths(120, 60), 3,
                                     /*shard_tokens=*/1 << 20);
    }
    options_.cache_dir = cache_.path();
    options_.http_attempts = 2;
    options_.prefetch_threads = 1;
  }
  std::shared_ptr<Dataset> Open(const std::string& name) {
    auto ds = Dataset::Open(server_.url() + "/" + name, options_);
    EXPECT_TRUE(ds.ok()) << ds.status().ToString();
    return ds.ok() ? *ds : nullptr;
  }
  // Hints chunk k of `ds` for `step`.
  void Hint(const Dataset& ds, uint64_t k, int64_t step) {
    ds.Prefetch(k * kChunkTokens, 1, step, stats_);
  }
  std::vector<std::string> Fetches(size_t n) { return server_.AwaitRanges(".bin", n, kDeadline); }
  static std::string Chunk(const std::string& name, uint64_t k) {
    return "/" + name + "/shard-00000.bin@" + std::to_string(k * 256);
  }

  TempDir root_, cache_;
  HttpTestServer server_{root_.path()};
  StorageOptions options_;
  std::shared_ptr<ReadStats> stats_ = std::make_shared<ReadStats>();
};

TEST_F(StoragePoolsTest, EqualSettingsShareOnePoolAndOtherSettingsGetTheirOwn) {
  const std::shared_ptr<StoragePools> one = StoragePools::For(options_);
  EXPECT_EQ(StoragePools::For(options_), one);
  StorageOptions other = options_;
  other.http_concurrency = 3;
  EXPECT_NE(StoragePools::For(other), one);
  other = options_;
  other.cache_dir = root_.path();
  EXPECT_NE(StoragePools::For(other), one);
}

TEST_F(StoragePoolsTest, TwoDatasetsHintsAreFetchedNearestStepFirstAcrossThem) {
  std::shared_ptr<Dataset> a = Open("a"), b = Open("b");
  ASSERT_TRUE(a && b);
  server_.Hold();
  Hint(*a, 0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk("a", 0)}) << "the thread never started";
  // With a pool per dataset, b's first hint would be fetched now, beside a's.
  Hint(*b, 1, 5);
  Hint(*a, 2, 3);
  Hint(*b, 3, 1);
  Hint(*a, 4, 9);
  server_.Release();
  EXPECT_EQ(Fetches(5), (std::vector<std::string>{Chunk("a", 0), Chunk("b", 3), Chunk("a", 2),
                                                  Chunk("b", 1), Chunk("a", 4)}));
  EXPECT_EQ(Threads(Prefetcher::kThreadName), 1);
}

TEST_F(StoragePoolsTest, ADatasetDestroyedWithHintsQueuedLeavesTheOthersHints) {
  std::shared_ptr<Dataset> a = Open("a"), b = Open("b");
  ASSERT_TRUE(a && b);
  server_.Hold();
  Hint(*b, 0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk("b", 0)}) << "the thread never started";
  for (uint64_t k = 1; k < 6; ++k) Hint(*a, k, static_cast<int64_t>(k));
  Hint(*b, 2, 10);  // Later than all of a's: next only if a's are gone.
  // Drops a's queued hints; none of a's runs (the fetch in flight is b's),
  // so it returns at once, and nothing of a's is fetched afterwards.
  a.reset();
  server_.Release();
  EXPECT_EQ(Fetches(2), (std::vector<std::string>{Chunk("b", 0), Chunk("b", 2)}));
  std::vector<int64_t> got(kChunkTokens);
  ASSERT_TRUE(b->ReadTokens(3 * kChunkTokens, kChunkTokens, got.data()).ok());
  EXPECT_EQ(got[0], testing::TokenAt(3 * kChunkTokens, 3));
  // The read's fetch comes after b's hint: a's never ran.
  EXPECT_EQ(Fetches(3).back(), Chunk("b", 3));
}

TEST_F(StoragePoolsTest, ADatasetDestroyedWithItsFetchInFlightWaitsForItAlone) {
  std::shared_ptr<Dataset> a = Open("a"), b = Open("b");
  ASSERT_TRUE(a && b);
  server_.Hold();
  Hint(*a, 0, 0);
  ASSERT_EQ(Fetches(1), std::vector<std::string>{Chunk("a", 0)}) << "the thread never started";
  Hint(*b, 2, 10);
  // Returns once a's fetch is done (the task owns what it uses: ASan checks
  // that nothing of the dataset is touched after it went).
  std::thread destroyer([&] { a.reset(); });
  server_.Release();
  destroyer.join();
  EXPECT_EQ(Fetches(2), (std::vector<std::string>{Chunk("a", 0), Chunk("b", 2)}));
}

TEST_F(StoragePoolsTest, ThreadsStayBoundedHoweverManyDatasetsAreOpen) {
  constexpr int kDatasets = 200;
  std::vector<std::string> urls;
  for (int i = 0; i < kDatasets; ++i) {
    // Each its own URL (so its own chunk keys), the files the same.
    const std::string name = "s" + std::to_string(i);
    ASSERT_EQ(::symlink(root_.Join("a").c_str(), root_.Join(name).c_str()), 0);
    urls.push_back(server_.url() + "/" + name);
  }
  options_.prefetch_threads = 4;
  const int before = Threads();
  auto opened = Dataset::OpenAll(urls, options_, DatasetOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  ASSERT_EQ(opened->size(), urls.size());
  EXPECT_EQ(Threads(), before) << "OpenAll's threads outlived it";
  // Every dataset hints and reads: the pool starts, and stays one pool.
  std::vector<int64_t> got(kChunkTokens);
  for (const std::shared_ptr<Dataset>& ds : *opened) {
    Hint(*ds, 1, 0);
    ASSERT_TRUE(ds->ReadTokens(0, kChunkTokens, got.data()).ok());
    EXPECT_EQ(got[5], testing::TokenAt(5, 3));
  }
  EXPECT_EQ(Threads(Prefetcher::kThreadName), 4);
  EXPECT_LE(Threads(), before + 4);
}

TEST_F(StoragePoolsTest, OpenAllNamesTheFirstDatasetThatFailsInTheOrderGiven) {
  auto opened = Dataset::OpenAll(
      {server_.url() + "/a", server_.url() + "/missing-1", server_.url() + "/missing-2"}, options_,
      DatasetOptions());
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("missing-1"), std::string::npos)
      << opened.status().ToString();
}

}  // namespace
}  // namespace tokpack
