// Remote datasets opened with explicit StorageOptions, over a real loopback
// HTTP server: datasets and loaders in one process keep their caches and
// their statistics apart, a dataset's prefetch threads end with it, and a
// hostile or broken server (redirects elsewhere, endless manifests, silence)
// or a removed cache directory gets a clear answer.
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "storage/chunk_cache.h"
#include "storage/remote_source.h"
#include "tests/reader/synthetic_dataset.h"
#include "tests/storage/http_test_server.h"
#include "tests/test_util.h"
#include "tokpack/dataset.h"
#include "tokpack/loader.h"

namespace tokpack {
namespace {

using testing::HttpTestServer;
using testing::TempDir;
using testing::TokenAt;

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.

uint64_t CacheBytes(const std::string& dir) {
  auto cache = ChunkCache::Open(dir, 1);
  EXPECT_TRUE(cache.ok());
  if (!cache.ok()) return 0;
  auto bytes = (*cache)->BytesOnDisk();
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : 0;
}

int ThreadsOfThisProcess() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  while (dirent* e = d ? ::readdir(d) : nullptr) n += e->d_name[0] != '.';
  if (d) ::closedir(d);
  return n;
}

uint64_t BinBytes(const Manifest& m) {
  uint64_t n = 0;
  for (const ShardInfo& s : m.shards) n += s.bin.bytes;
  return n;
}

class RemoteDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    manifest_a_ = testing::WriteSyntheticDataset(root_.Join("a"), testing::CyclingLengths(150, 40),
                                                 /*salt=*/1);
    manifest_b_ = testing::WriteSyntheticDataset(root_.Join("b"), testing::CyclingLengths(150, 40),
                                                 /*salt=*/2);
  }
  StorageOptions Storage(const std::string& cache, uint64_t limit = uint64_t{1} << 30) const {
    StorageOptions o;
    o.cache_dir = caches_.Join(cache);
    o.cache_bytes = limit;
    o.http_attempts = 2;
    o.prefetch_threads = 2;
    return o;
  }
  static void ExpectAllTokens(const Dataset& ds, uint64_t salt, ReadStats* stats) {
    std::vector<int64_t> got(ds.num_tokens());
    ASSERT_TRUE(ds.ReadTokens(0, got.size(), got.data(), stats).ok());
    for (uint64_t t = 0; t < got.size(); ++t) ASSERT_EQ(got[t], TokenAt(t, salt)) << t;
  }

  TempDir root_, caches_;
  Manifest manifest_a_, manifest_b_;
};

TEST_F(RemoteDatasetTest, DatasetsWithDifferentCachesAndLimitsStayApart) {
  HttpTestServer server(root_.path());
  const uint64_t small = 4 * 256;  // Four of the test datasets' 256-byte chunks.
  auto a = Dataset::Open(server.url() + "/a", Storage("big"));
  auto b = Dataset::Open(server.url() + "/b", Storage("small", small));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ExpectAllTokens(**a, 1, nullptr);
  ExpectAllTokens(**b, 2, nullptr);
  // Each dataset filled its own directory, under its own limit.
  EXPECT_GE(CacheBytes(caches_.Join("big")), BinBytes(manifest_a_));
  EXPECT_GT(CacheBytes(caches_.Join("small")), 0u);
  EXPECT_LE(CacheBytes(caches_.Join("small")), small);
}

TEST_F(RemoteDatasetTest, WithoutStorageOptionsARemoteDatasetAsksForThem) {
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/a");
  EXPECT_EQ(ds.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ds.status().message().find("cache_dir"), std::string::npos) << ds.status().ToString();
  StorageOptions bad = Storage("c");
  bad.http_concurrency = 0;
  EXPECT_NE(Dataset::Open(server.url() + "/a", bad).status().message().find("http_concurrency"),
            std::string::npos);
}

TEST_F(RemoteDatasetTest, ReadStatsCountOnlyTheReadsTheyArePassedTo) {
  HttpTestServer server(root_.path());
  auto a = Dataset::Open(server.url() + "/a", Storage("shared"));
  auto b = Dataset::Open(server.url() + "/b", Storage("shared"));
  ASSERT_TRUE(a.ok() && b.ok());
  ReadStats first, second, other;
  ExpectAllTokens(**a, 1, &first);
  ExpectAllTokens(**b, 2, &other);
  ExpectAllTokens(**a, 1, &second);
  EXPECT_EQ(first.bytes_fetched.load(), BinBytes(manifest_a_));
  EXPECT_GT(first.cache_misses.load(), 0u);
  EXPECT_EQ(other.bytes_fetched.load(), BinBytes(manifest_b_));
  // Everything the second reader needs was cached by the first.
  EXPECT_EQ(second.cache_misses.load(), 0u);
  EXPECT_EQ(second.bytes_fetched.load(), 0u);
  EXPECT_EQ(second.cache_hits.load(), first.cache_misses.load() + first.cache_hits.load());
}

TEST_F(RemoteDatasetTest, LoaderStatsAreThisLoadersOwn) {
  HttpTestServer server(root_.path());
  auto a = Dataset::Open(server.url() + "/a", Storage("shared"));
  auto b = Dataset::Open(server.url() + "/b", Storage("other"));
  ASSERT_TRUE(a.ok() && b.ok());
  LoaderOptions o;
  o.seq_len = 32;
  o.batch_size = 2;
  o.epochs = 1;
  o.shuffle = ShuffleMode::kNone;
  // No prefetches: one that lands after a loader is drained would move its
  // counts (rightly) and make the comparisons below racy.
  o.lookahead_steps = 0;
  const auto drain = [](Loader& l) {
    while (true) {
      auto batch = l.Next();
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      if (*batch == nullptr) return;
    }
  };
  auto first = Loader::Create({{*a, 1.0}}, o);
  ASSERT_TRUE(first.ok());
  drain(**first);
  const LoaderStats done = (*first)->Stats();
  EXPECT_GT(done.cache_misses, 0u);
  EXPECT_GT(done.bytes_fetched, 0u);
  // A second loader over the same (now cached) data, while a third
  // downloads other data in the same process.
  auto second = Loader::Create({{*a, 1.0}}, o);
  auto third = Loader::Create({{*b, 1.0}}, o);
  ASSERT_TRUE(second.ok() && third.ok());
  std::thread t([&] { drain(**third); });
  drain(**second);
  t.join();
  EXPECT_EQ((*second)->Stats().cache_misses, 0u);
  EXPECT_EQ((*second)->Stats().bytes_fetched, 0u);
  EXPECT_GT((*second)->Stats().cache_hits, 0u);
  EXPECT_GT((*third)->Stats().cache_misses, 0u);
  // The first loader's counts did not move with the others' traffic.
  EXPECT_EQ((*first)->Stats().cache_misses, done.cache_misses);
  EXPECT_EQ((*first)->Stats().cache_hits, done.cache_hits);
}

TEST_F(RemoteDatasetTest, TheLookaheadFollowsThePhases) {
  HttpTestServer server(root_.path());
  auto a = Dataset::Open(server.url() + "/a", Storage("a"));
  auto b = Dataset::Open(server.url() + "/b", Storage("b"));
  ASSERT_TRUE(a.ok() && b.ok());
  LoaderOptions o;
  o.seq_len = 32;
  o.batch_size = 2;
  o.shuffle = ShuffleMode::kNone;
  o.prefetch = 4;
  o.lookahead_steps = 16;
  // Only b from step 6 on. Without a Next(), the planners fill the ring
  // with steps 0-3 (a only), and the lookahead grows to 4 steps past them:
  // into phase 1, so b's first chunk is asked for before any row needs it.
  auto l = Loader::Create({*a, *b}, {{0, {1, 0}}, {6, {0, 1}}}, o);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  const std::string b_bin = "/b/" + manifest_b_.shards[0].path + ".bin";
  EXPECT_FALSE(server.AwaitRanges(b_bin, 1, kDeadline).empty()) << "b was never prefetched";
  for (int step = 0; step < 8; ++step) {
    auto batch = (*l)->Next();
    ASSERT_TRUE(batch.ok() && *batch);
    const int64_t first = static_cast<const int64_t*>((*batch)->inputs())[0];
    // In stream order: a's samples 2k, 2k+1 at step k, then b's from its first.
    EXPECT_EQ(first, step < 6 ? TokenAt(step * 64, 1) : TokenAt((step - 6) * 64, 2)) << step;
  }
}

TEST_F(RemoteDatasetTest, DestroyingADatasetWithPrefetchesInFlightJoinsItsThreads) {
  HttpTestServer server(root_.path(), std::chrono::milliseconds(100));
  const int threads_before = ThreadsOfThisProcess();
  auto ds = Dataset::Open(server.url() + "/a", Storage("c"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const int requests_at_open = server.requests();
  auto stats = std::make_shared<ReadStats>();
  (*ds)->Prefetch(0, (*ds)->num_tokens(), /*step=*/0, stats);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (server.requests() == requests_at_open && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(server.requests(), requests_at_open) << "no prefetch reached the server";
  ds->reset();  // Drops the queued fetches, waits for those in flight.
  // Every fetch that reached the server finished before the reset returned.
  const uint64_t fetched = stats->cache_misses.load();
  EXPECT_EQ(fetched, static_cast<uint64_t>(server.requests() - requests_at_open));
  const uint64_t chunks = (BinBytes(manifest_a_) + 255) / 256;
  EXPECT_LT(fetched, chunks) << "the queued prefetches should have been dropped";
  // No thread of the dataset outlives it (curl keeps none).
  while (ThreadsOfThisProcess() != threads_before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ThreadsOfThisProcess(), threads_before);
  EXPECT_EQ(stats->cache_misses.load(), fetched);
}

// A redirect response to `location`.
std::string Redirect(const std::string& location) {
  return "HTTP/1.1 302 Found\r\nLocation: " + location +
         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

TEST_F(RemoteDatasetTest, RedirectsAreFollowedOnlyWithinTheDatasetsOrigin) {
  HttpTestServer elsewhere(root_.path());
  HttpTestServer server(root_.path(), [&](int fd, const std::string& path, const std::string&) {
    std::string to;
    if (path.rfind("/away/", 0) == 0) to = elsewhere.url() + "/a/" + path.substr(6);
    if (path.rfind("/moved/", 0) == 0) to = "/a/" + path.substr(7);
    if (to.empty()) return false;
    HttpTestServer::Send(fd, Redirect(to));
    return true;
  });
  // Within the origin (a relative Location): followed, for the manifest and
  // for every ranged read.
  auto moved = Dataset::Open(server.url() + "/moved", Storage("c"));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  ExpectAllTokens(**moved, 1, nullptr);
  // To another host:port: refused, naming both URLs; nothing is asked of it.
  auto away = Dataset::Open(server.url() + "/away", Storage("c"));
  ASSERT_FALSE(away.ok());
  const std::string& message = away.status().message();
  EXPECT_NE(message.find(server.url() + "/away/manifest.json"), std::string::npos) << message;
  EXPECT_NE(message.find(elsewhere.url() + "/a/manifest.json"), std::string::npos) << message;
  EXPECT_EQ(elsewhere.requests(), 0);
}

TEST_F(RemoteDatasetTest, AManifestOverItsCapIsRefusedBeforeItsBody) {
  // (A body that runs past its cap with no Content-Length is stopped the
  // same way as it arrives: see http_store_test.cc.)
  constexpr uint64_t kOver = Manifest::kMaxJsonBytes + 1;
  HttpTestServer server(root_.path(), [&](int fd, const std::string& path, const std::string&) {
    if (path != "/big/manifest.json") return false;
    if (!HttpTestServer::Send(fd, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(kOver) +
                                      "\r\nConnection: close\r\n\r\n")) {
      return true;
    }
    const std::string block(1 << 16, ' ');
    for (uint64_t sent = 0; sent < kOver; sent += block.size()) {
      if (!HttpTestServer::Send(fd, block)) break;
    }
    return true;
  });
  auto ds = Dataset::Open(server.url() + "/big", Storage("c"));
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kResourceExhausted) << ds.status().ToString();
  const std::string& message = ds.status().message();
  EXPECT_NE(message.find(server.url() + "/big/manifest.json"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(Manifest::kMaxJsonBytes)), std::string::npos) << message;
  EXPECT_EQ(server.requests(), 1);
}

// A manifest of a few KiB that claims a 200 GiB .idx in 1 GiB chunks: the
// open fails naming the URL and the cap, and asks the server for no chunk.
TEST_F(RemoteDatasetTest, AnIndexClaimedPastTheResidentCapIsRefusedBeforeAnyRead) {
  Manifest m = manifest_a_;
  m.chunk_bytes = Manifest::kMaxChunkBytes;
  for (ShardInfo& s : m.shards) {
    s.bin.chunk_xxh3.assign(1, 0);
    s.idx.chunk_xxh3.assign(1, 0);
  }
  m.shards[0].idx.bytes = uint64_t{200} << 30;
  m.shards[0].idx.chunk_xxh3.assign(200, 0);
  ASSERT_TRUE(Manifest::Parse(m.ToJson(), "test").ok());
  ASSERT_TRUE(CreateDirs(root_.Join("huge")).ok());
  ASSERT_TRUE(m.Save(root_.Join("huge")).ok());
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/huge", Storage("c"));
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kResourceExhausted) << ds.status().ToString();
  const std::string& message = ds.status().message();
  EXPECT_NE(message.find(server.url() + "/huge/" + m.shards[0].path + ".idx"), std::string::npos)
      << message;
  EXPECT_NE(message.find(std::to_string(RemoteOpener::kMaxResidentBytes)), std::string::npos)
      << message;
  EXPECT_EQ(server.requests(), 1);  // manifest.json only.
}

TEST_F(RemoteDatasetTest, AStalledServerFailsNamingTheStallTimeout) {
  HttpTestServer server(root_.path(), [](int fd, const std::string&, const std::string&) {
    HttpTestServer::Silence(fd);
    return true;
  });
  StorageOptions o = Storage("c");
  o.http_stall_seconds = 1;
  auto ds = Dataset::Open(server.url() + "/a", o);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), StatusCode::kUnavailable) << ds.status().ToString();
  EXPECT_NE(ds.status().message().find("no data for 1 s (StorageOptions::http_stall_seconds"),
            std::string::npos)
      << ds.status().ToString();
  EXPECT_EQ(server.requests(), o.http_attempts);
}

TEST_F(RemoteDatasetTest, AStalledChunkCostsOneRoundOfAttemptsAcrossItsPrefetchAndItsRead) {
  // The .bin never answers; the manifest and indexes do.
  HttpTestServer server(root_.path(), [](int fd, const std::string& path, const std::string&) {
    if (path.size() < 4 || path.compare(path.size() - 4, 4, ".bin") != 0) return false;
    HttpTestServer::Silence(fd);
    return true;
  });
  StorageOptions o = Storage("c");
  o.http_stall_seconds = 1;
  o.http_attempts = 3;
  auto ds = Dataset::Open(server.url() + "/a", o);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const std::string bin = "/a/" + manifest_a_.shards[0].path + ".bin@0";
  (*ds)->Prefetch(0, 1, /*step=*/0, std::make_shared<ReadStats>());
  ASSERT_EQ(server.AwaitRanges(bin, 1, kDeadline).size(), 1u) << "the prefetch never asked";
  // The read waits for the prefetch under way and continues its attempts:
  // their failure is its own, after one round, not a round of its own on top.
  int64_t token = 0;
  const Status read = (*ds)->ReadTokens(0, 1, &token);
  EXPECT_EQ(read.code(), StatusCode::kUnavailable) << read.ToString();
  EXPECT_NE(read.message().find("failed after 3 attempts"), std::string::npos) << read.ToString();
  EXPECT_EQ(server.AwaitRanges(bin, 3, kDeadline).size(), 3u);
  // A later read, which finds no fetch under way, tries a round of its own:
  // the server may be back.
  EXPECT_EQ((*ds)->ReadTokens(0, 1, &token).code(), StatusCode::kUnavailable);
  EXPECT_EQ(server.AwaitRanges(bin, 6, kDeadline).size(), 6u);
  ds->reset();
  EXPECT_EQ(server.AwaitRanges(bin, 7, std::chrono::seconds(0)).size(), 6u);
}

TEST_F(RemoteDatasetTest, ACacheDirectoryRemovedWhileInUseIsMadeAgain) {
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/a", Storage("c"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  std::vector<int64_t> first(100);
  ASSERT_TRUE((*ds)->ReadTokens(0, first.size(), first.data()).ok());
  std::filesystem::remove_all(caches_.Join("c"));
  ExpectAllTokens(**ds, 1, nullptr);
  // All but the first chunk, which is still read from its mapping of the
  // removed file.
  EXPECT_EQ(CacheBytes(caches_.Join("c")), BinBytes(manifest_a_) - manifest_a_.chunk_bytes)
      << "reads went uncached";
}

TEST_F(RemoteDatasetTest, ReadsAcrossChunkBoundariesThroughTheMappingsAreExact) {
  // int32 tokens in chunks of 250 bytes: every other chunk ends inside a token.
  constexpr uint64_t kSalt = 3;
  testing::WriteSyntheticDataset(root_.Join("odd"), testing::CyclingLengths(150, 40), kSalt, 1000,
                                 TokenDtype::kInt32, 250);
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/odd", Storage("c"));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ReadStats cold, warm;
  ExpectAllTokens(**ds, kSalt, &cold);
  std::mt19937 rng(1);
  const uint64_t total = (*ds)->num_tokens();
  for (int i = 0; i < 300; ++i) {
    const uint64_t begin = rng() % total;
    const uint64_t count = 1 + rng() % std::min<uint64_t>(total - begin, 300);
    std::vector<int32_t> narrow(count), stored(count);
    std::vector<int64_t> wide(count);
    ASSERT_TRUE((*ds)->ReadTokens(begin, count, narrow.data(), &warm).ok());
    ASSERT_TRUE((*ds)->ReadTokens(begin, count, wide.data(), &warm).ok());
    ASSERT_TRUE((*ds)->ReadStoredTokens(begin, count, stored.data(), &warm).ok());
    for (uint64_t j = 0; j < count; ++j) {
      ASSERT_EQ(narrow[j], TokenAt(begin + j, kSalt)) << begin << "+" << j;
      ASSERT_EQ(wide[j], TokenAt(begin + j, kSalt)) << begin << "+" << j;
      ASSERT_EQ(stored[j], TokenAt(begin + j, kSalt)) << begin << "+" << j;
    }
  }
  EXPECT_EQ(warm.cache_misses.load(), 0u);
  EXPECT_GT(warm.cache_hits.load(), 0u);
}

TEST_F(RemoteDatasetTest, ThreadsReadRightWhileTheirMappingsComeAndGo) {
  // A 2000-byte cache: the process maps at most 1000 bytes (3 chunks of 256)
  // of the dataset's 6 KB, so the threads' reads keep mapping chunks and
  // releasing others that another thread may still be reading.
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/a", Storage("small", 2000));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  const uint64_t total = (*ds)->num_tokens();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<int64_t> got;
      for (int i = 0; i < 300; ++i) {
        const uint64_t begin = rng() % total;
        got.resize(1 + rng() % std::min<uint64_t>(total - begin, 200));
        if (!(*ds)->ReadTokens(begin, got.size(), got.data()).ok()) {
          wrong++;
          continue;
        }
        for (uint64_t j = 0; j < got.size(); ++j) wrong += got[j] != TokenAt(begin + j, 1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(CacheBytes(caches_.Join("small")), 2000u);
}

TEST_F(RemoteDatasetTest, AutoTakesTheFullShuffleWhereNoWindowUnitHoldsASample) {
  // Shards of about 100 tokens, each shorter than a sample of 128: no sample
  // lies inside a window unit or tail, but the stream has samples, so auto
  // must not fail where full works.
  testing::WriteSyntheticDataset(root_.Join("small"), testing::CyclingLengths(150, 40),
                                 /*salt=*/4, /*shard_tokens=*/64);
  HttpTestServer server(root_.path());
  auto ds = Dataset::Open(server.url() + "/small", Storage("small", /*limit=*/1024));
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  ASSERT_GT((*ds)->num_shards(), 10u);
  LoaderOptions o;
  o.seq_len = 128;
  o.batch_size = 2;
  auto loader = Loader::Create({{*ds, 1.0}}, o);
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  EXPECT_EQ((*loader)->options().shuffle, ShuffleMode::kFull);
  o.shuffle = ShuffleMode::kWindow;
  auto window = Loader::Create({{*ds, 1.0}}, o);
  ASSERT_FALSE(window.ok());
  EXPECT_NE(window.status().message().find("use shuffle=full"), std::string::npos)
      << window.status().ToString();
}

}  // namespace
}  // namespace tokpack
