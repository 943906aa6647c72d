#include "storage/chunk_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "common/chunk_hasher.h"
#include "io/file_system.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

std::string ChunkBytes(int k, size_t n = 1000) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((k * 131 + i * 7) & 0xff);
  return s;
}

std::string Key(int k) { return "obj-" + std::to_string(k); }

// Reads all of chunk k through the cache, counting fetches.
Status ReadChunk(ChunkCache& cache, int k, int* fetches, std::string* out) {
  const std::string want = ChunkBytes(k);
  out->assign(want.size(), '\0');
  return cache.Read(
      Key(k), "chunk " + std::to_string(k), want.size(), Xxh3(want), 0, want.size(), out->data(),
      [&](std::string* data) {
        ++*fetches;
        *data = want;
        return Status::Ok();
      },
      nullptr);
}

TEST(ChunkCache, FetchesOnceThenServesFromDiskToEveryProcess) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());
  EXPECT_EQ(got, ChunkBytes(1));
  EXPECT_EQ(fetches, 1);
  // A part of a chunk, through another cache object on the same directory.
  auto again = ChunkCache::Open(dir.Join("c"), 1 << 20);
  const std::string want = ChunkBytes(1);
  char part[10];
  ASSERT_TRUE((*again)
                  ->Read(
                      Key(1), "c1", want.size(), Xxh3(want), 500, 10, part,
                      [](std::string*) { return IoError("must not fetch"); }, nullptr)
                  .ok());
  EXPECT_EQ(std::string(part, 10), want.substr(500, 10));
}

TEST(ChunkCache, FourProcessesDownloadEachChunkExactlyOnce) {
  TempDir dir;
  const std::string log = dir.Join("fetches.log");
  constexpr int kChunks = 24;
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
      if (!cache.ok()) _exit(2);
      std::vector<int> order(kChunks);
      for (int k = 0; k < kChunks; ++k) order[k] = k;
      std::shuffle(order.begin(), order.end(), std::mt19937(p));
      for (int k : order) {
        const std::string want = ChunkBytes(k);
        std::string got(want.size(), '\0');
        Status s = (*cache)->Read(
            Key(k), "c", want.size(), Xxh3(want), 0, want.size(), got.data(),
            [&](std::string* data) {
              // Slow, as a network fetch is, so the processes overlap.
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
              const std::string line = Key(k) + "\n";
              if (::write(fd, line.data(), line.size()) < 0) _exit(3);
              ::close(fd);
              *data = want;
              return Status::Ok();
            },
            nullptr);
        if (!s.ok() || got != want) _exit(4);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  std::map<std::string, int> per_key;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) per_key[line]++;
  ASSERT_EQ(per_key.size(), static_cast<size_t>(kChunks));
  for (const auto& [key, n] : per_key) EXPECT_EQ(n, 1) << key;
}

TEST(ChunkCache, StaysWithinItsLimitEvictingTheLeastRecentlyUsedButNotChunksInUse) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 3500);  // Room for three chunks of 1000.
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  ASSERT_TRUE(ReadChunk(**cache, 0, &fetches, &got).ok());
  // A reader holds chunk 0 (shared lock) for the whole test.
  const std::string held = dir.Join("c/chunks/" + Key(0));
  const int fd = ::open(held.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  for (int k = 1; k <= 12; ++k) {
    ASSERT_TRUE(ReadChunk(**cache, k, &fetches, &got).ok()) << k;
    EXPECT_EQ(got, ChunkBytes(k));
    auto bytes = (*cache)->BytesOnDisk();
    ASSERT_TRUE(bytes.ok());
    EXPECT_LE(*bytes, 3500u) << k;
    // Chunk 1 is read again each round, so it stays among the recently used.
    if (k > 1) {
      ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());
    }
  }
  EXPECT_TRUE(FileSize(held).ok()) << "a chunk in use was evicted";
  EXPECT_TRUE(FileSize(dir.Join("c/chunks/" + Key(1))).ok()) << "the most recently used went";
  EXPECT_FALSE(FileSize(dir.Join("c/chunks/" + Key(5))).ok()) << "an old chunk stayed";
  EXPECT_EQ(fetches, 13);  // Chunk 1 never had to come back.
  ::close(fd);
}

TEST(ChunkCache, AWriterKilledMidChunkLeavesNothingThatCountsForLong) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 3000);
  ASSERT_TRUE(cache.ok());
  // What a writer killed between writing and renaming leaves behind.
  std::ofstream(dir.Join("c/chunks/.tmp-obj-9")) << std::string(2000, 'x');
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 2000u);  // Counted: the limit stays honest.
  int fetches = 0;
  std::string got;
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());
  EXPECT_FALSE(FileSize(dir.Join("c/chunks/.tmp-obj-9")).ok());
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 1000u);
}

TEST(ChunkCache, ACorruptFetchIsRetriedOnceThenRefusedByName) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
  ASSERT_TRUE(cache.ok());
  const std::string want = ChunkBytes(7);
  std::string flipped = want;
  flipped[3] ^= 1;
  int calls = 0;
  std::string got(want.size(), '\0');
  ASSERT_TRUE((*cache)
                  ->Read(
                      Key(7), "c7", want.size(), Xxh3(want), 0, want.size(), got.data(),
                      [&](std::string* data) {
                        *data = calls++ == 0 ? flipped : want;
                        return Status::Ok();
                      },
                      nullptr)
                  .ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(got, want);
  Status s = (*cache)->Read(
      Key(8), "s3://b/d/shard-00000.bin chunk 8", want.size(), Xxh3(want), 0, want.size(),
      got.data(),
      [&](std::string* data) {
        *data = flipped;
        return Status::Ok();
      },
      nullptr);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("shard-00000.bin chunk 8"), std::string::npos) << s.ToString();
  EXPECT_FALSE(FileSize(dir.Join("c/chunks/" + Key(8))).ok());
}

}  // namespace
}  // namespace tokpack
