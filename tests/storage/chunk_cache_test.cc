#include "storage/chunk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <random>
#include <thread>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
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
Status ReadChunk(ChunkCache& cache, int k, int* fetches, std::string* out,
                 ReadStats* stats = nullptr) {
  const std::string want = ChunkBytes(k);
  out->assign(want.size(), '\0');
  return cache.Read(
      Key(k), "chunk " + std::to_string(k), want.size(), Xxh3(want), 0, want.size(), out->data(),
      [&](std::string* data) {
        ++*fetches;
        *data = want;
        return Status::Ok();
      },
      stats);
}

// Entries of a directory (0 if it does not exist).
int FilesIn(const std::string& dir) {
  int n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
  }
  if (d) ::closedir(d);
  return n;
}

constexpr std::chrono::seconds kDeadline(60);  // Generous: a loaded 2-core machine.

// Runs child(p) in `n` forked processes, p = 0..n-1, and waits for them all:
// a fatal failure unless each exits 0 (a child _exits with another code to
// say what went wrong).
void RunInChildren(int n, const std::function<void(int)>& child) {
  std::vector<pid_t> children;
  for (int p = 0; p < n; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      child(p);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
}

// A child process that takes the flock on `path` and stops (SIGSTOP) while
// it holds it, as a fetcher stopped by Ctrl-Z or a debugger. Killed (which
// frees the lock) by Release() or the destructor.
class StoppedLockHolder {
 public:
  explicit StoppedLockHolder(const std::string& path) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
      if (fd < 0 || ::flock(fd, LOCK_EX) != 0) _exit(2);
      if (::write(fds[1], "x", 1) != 1) _exit(3);
      ::raise(SIGSTOP);
      _exit(0);
    }
    ::close(fds[1]);
    char c;
    held_ = pid_ > 0 && ::read(fds[0], &c, 1) == 1;
    ::close(fds[0]);
  }
  ~StoppedLockHolder() { Release(); }
  void Release() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool held() const { return held_; }

 private:
  pid_t pid_ = -1;
  bool held_ = false;
};

// A child process that reads `chunks` through a cache on `dir` (so maps
// them) and keeps them mapped until Release() or the destructor.
class MappingHolder {
 public:
  MappingHolder(const std::string& dir, uint64_t limit, const std::vector<int>& chunks) {
    int ready[2], done[2];
    if (::pipe(ready) != 0 || ::pipe(done) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(done[1]);
      auto cache = ChunkCache::Open(dir, limit);
      if (!cache.ok()) _exit(2);
      int fetches = 0;
      std::string got;
      for (int k : chunks) {
        if (!ReadChunk(**cache, k, &fetches, &got).ok() || got != ChunkBytes(k)) _exit(3);
      }
      if (::write(ready[1], "x", 1) != 1) _exit(4);
      char c;
      while (::read(done[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    ::close(ready[1]);
    ::close(done[0]);
    done_ = done[1];
    char c;
    held_ = pid_ > 0 && ::read(ready[0], &c, 1) == 1;
    ::close(ready[0]);
  }
  ~MappingHolder() { Release(); }
  // Lets the child end (its mappings go with it) and reaps it.
  void Release() {
    if (pid_ <= 0) return;
    ::close(done_);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool held() const { return held_; }

 private:
  pid_t pid_ = -1;
  int done_ = -1;
  bool held_ = false;
};

// Whether an evictor could take chunk k now (LOCK_EX | LOCK_NB, as it does).
bool Evictable(const std::string& chunks, int k) {
  const int fd = ::open((chunks + "/" + Key(k)).c_str(), O_RDONLY);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

struct timespec MtimeOf(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mtim;
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
  RunInChildren(4, [&](int p) {
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
  });
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(FilesIn(dir.Join("c/locks")), 0) << "a chunk's lock file outlived its fetch";
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

TEST(ChunkCache, LockFilesDoNotOutliveTheirFetches) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 3500);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  for (int k = 0; k < 40; ++k) ASSERT_TRUE(ReadChunk(**cache, k, &fetches, &got).ok()) << k;
  // Fetches that fail leave no lock file either.
  char byte;
  EXPECT_FALSE((*cache)
                   ->Read(
                       Key(99), "c99", 10, 0, 0, 1, &byte,
                       [](std::string*) { return IoError("the network is down"); }, nullptr)
                   .ok());
  EXPECT_EQ(FilesIn(dir.Join("c/chunks")), 3);
  EXPECT_EQ(FilesIn(dir.Join("c/locks")), 0);
}

TEST(ChunkCache, ProcessesEvictingAndRefetchingTheSameChunksAllReadThemRight) {
  // The lock files come and go under four processes that fetch, map, evict
  // and fetch again the same chunks; every read must still give the chunk's
  // bytes, and the chunks on disk stay within the limit.
  TempDir dir;
  constexpr int kChunks = 12;
  RunInChildren(4, [&](int p) {
    auto cache = ChunkCache::Open(dir.Join("c"), 3500);
    if (!cache.ok()) _exit(2);
    std::mt19937 rng(p);
    int fetches = 0;
    std::string got;
    for (int i = 0; i < 200; ++i) {
      const int k = static_cast<int>(rng() % kChunks);
      if (!ReadChunk(**cache, k, &fetches, &got).ok() || got != ChunkBytes(k)) _exit(3);
      // Each process holds mappings, yet the limit holds.
      if (*(*cache)->BytesOnDisk() > 3500u) _exit(4);
    }
  });
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_EQ(FilesIn(dir.Join("c/locks")), 0);
  EXPECT_LE(*(*ChunkCache::Open(dir.Join("c"), 3500))->BytesOnDisk(), 3500u);
}

TEST(ChunkCache, ARemovedCacheDirectoryIsMadeAgainAndItsMappedChunksStayReadable) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());  // Now mapped.
  std::filesystem::remove_all(dir.Join("c"));
  for (int k : {1, 2, 2, 1}) {
    Status s = ReadChunk(**cache, k, &fetches, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(got, ChunkBytes(k));
  }
  // Chunk 1 is read from its mapping of the removed file; chunk 2 went to
  // the directory made again.
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 1000u);
  EXPECT_TRUE(FileSize(dir.Join("c/chunks/" + Key(2))).ok());
}

TEST(ChunkCache, AChunkMappedByAnotherProcessIsNotEvictedUntilItLetsGo) {
  TempDir dir;
  const std::string chunks = dir.Join("c/chunks");
  MappingHolder holder(dir.Join("c"), 3500, {0});  // Room for three chunks.
  ASSERT_TRUE(holder.held());
  auto cache = ChunkCache::Open(dir.Join("c"), 3500);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  for (int k = 1; k <= 8; ++k) {
    ASSERT_TRUE(ReadChunk(**cache, k, &fetches, &got).ok()) << k;
    EXPECT_EQ(got, ChunkBytes(k));
    EXPECT_LE(*(*cache)->BytesOnDisk(), 3500u) << k;
    EXPECT_TRUE(FileSize(chunks + "/" + Key(0)).ok()) << "evicted while mapped, at " << k;
  }
  EXPECT_EQ(fetches, 8);
  EXPECT_FALSE(Evictable(chunks, 0));
  holder.Release();
  EXPECT_TRUE(Evictable(chunks, 0));
  ASSERT_TRUE(ReadChunk(**cache, 9, &fetches, &got).ok());
  EXPECT_FALSE(FileSize(chunks + "/" + Key(0)).ok()) << "the least recently used stayed";
}

TEST(ChunkCache, PastItsBoundAProcessReleasesTheLeastRecentlyUsedMapping) {
  TempDir dir;
  const std::string chunks = dir.Join("c/chunks");
  // A limit of 4000 bytes: a process maps at most half, two chunks of 1000.
  auto cache = ChunkCache::Open(dir.Join("c"), 4000);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  for (int k : {0, 1, 0}) ASSERT_TRUE(ReadChunk(**cache, k, &fetches, &got).ok());
  EXPECT_FALSE(Evictable(chunks, 0));
  EXPECT_FALSE(Evictable(chunks, 1));
  ASSERT_TRUE(ReadChunk(**cache, 2, &fetches, &got).ok());
  EXPECT_TRUE(Evictable(chunks, 1)) << "chunk 1, the least recently used, is still mapped";
  EXPECT_FALSE(Evictable(chunks, 0));
  EXPECT_FALSE(Evictable(chunks, 2));
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got).ok());  // Mapped again: chunk 0 goes.
  EXPECT_EQ(got, ChunkBytes(1));
  EXPECT_TRUE(Evictable(chunks, 0));
  EXPECT_EQ(fetches, 3);
}

TEST(ChunkCache, AChunksMtimeIsTouchedWhenMappedNotOnEachRead) {
  TempDir dir;
  const std::string path = dir.Join("c/chunks/" + Key(0));
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  ASSERT_TRUE(ReadChunk(**cache, 0, &fetches, &got).ok());
  const struct timespec old[2] = {{946684800, 0}, {946684800, 0}};  // 2000-01-01.
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), old, 0), 0);
  // Another cache object on the directory shares this process's mappings.
  auto again = ChunkCache::Open(dir.Join("c"), 1 << 20);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ReadChunk(**cache, 0, &fetches, &got).ok());
    ASSERT_TRUE(ReadChunk(**again, 0, &fetches, &got).ok());
  }
  EXPECT_EQ(MtimeOf(path).tv_sec, 946684800) << "a read of a mapped chunk touched it";
  // One with a limit of 2000 maps one chunk: reading chunk 1 through it
  // releases chunk 0, which the next read maps again.
  auto small = ChunkCache::Open(dir.Join("c"), 2000);
  ASSERT_TRUE(ReadChunk(**small, 1, &fetches, &got).ok());
  ASSERT_TRUE(ReadChunk(**cache, 0, &fetches, &got).ok());
  EXPECT_GT(MtimeOf(path).tv_sec, 946684800) << "mapping it again did not touch it";
  EXPECT_EQ(fetches, 2);
}

TEST(ChunkCache, AChunkLargerThanTheCacheIsServedFromMemoryAndCounted) {
  TempDir dir;
  auto cache = ChunkCache::Open(dir.Join("c"), 500);
  ASSERT_TRUE(cache.ok());
  int fetches = 0;
  std::string got;
  ReadStats stats;
  for (int i = 0; i < 2; ++i) {
    Status s = ReadChunk(**cache, 1, &fetches, &got, &stats);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(got, ChunkBytes(1));
  }
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(stats.cache_misses.load(), 2u);
  EXPECT_EQ(stats.uncached_reads.load(), 2u);
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 0u);
}

TEST(ChunkCache, AChunkWriteFailingMidwayIsServedFromMemory) {
  // A write() that fails part way through a chunk, as on a full disk
  // (ENOSPC, EDQUOT): a file size limit makes write() fail the same way
  // (EFBIG once SIGXFSZ is ignored). The limit is per process: in a child.
  TempDir dir;
  RunInChildren(1, [&](int) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{500, 500};  // Half a chunk.
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(2);
    auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20);
    if (!cache.ok()) _exit(3);
    int fetches = 0;
    std::string got;
    ReadStats stats;
    for (int i = 0; i < 2; ++i) {
      if (!ReadChunk(**cache, 1, &fetches, &got, &stats).ok()) _exit(4);
      if (got != ChunkBytes(1)) _exit(5);
    }
    if (fetches != 2 || stats.uncached_reads.load() != 2) _exit(6);
    // Nothing half-written stays behind, and no lock file.
    if (FilesIn(dir.Join("c/chunks")) != 0 || FilesIn(dir.Join("c/locks")) != 0) _exit(7);
  });
}

TEST(ChunkCache, CancelEndsAWaitForAChunkLockThatAnotherProcessHolds) {
  TempDir dir;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  ChunkCache::LockWait wait;
  wait.limit = std::chrono::hours(1);
  wait.cancel = cancel;
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20, wait);
  ASSERT_TRUE(cache.ok());
  StoppedLockHolder holder(dir.Join("c/locks/" + Key(1)));
  ASSERT_TRUE(holder.held());
  int fetches = 0;
  std::string got;
  auto read = std::async(std::launch::async, [&] { return ReadChunk(**cache, 1, &fetches, &got); });
  cancel->store(true);
  const bool ended = read.wait_for(kDeadline) == std::future_status::ready;
  holder.Release();  // Lets a read that ignores the flag finish, so the test ends.
  const Status s = read.get();
  EXPECT_TRUE(ended) << "the read went on waiting for the lock after cancel";
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_EQ(fetches, 0);
}

TEST(ChunkCache, AChunkLockHeldByAStoppedProcessIsWaitedForOnlyUntilTheLimit) {
  TempDir dir;
  ChunkCache::LockWait wait;
  wait.limit = std::chrono::milliseconds(200);
  auto cache = ChunkCache::Open(dir.Join("c"), 1 << 20, wait);
  ASSERT_TRUE(cache.ok());
  StoppedLockHolder holder(dir.Join("c/locks/" + Key(1)));
  ASSERT_TRUE(holder.held());
  int fetches = 0;
  std::string got;
  ReadStats stats;
  auto read =
      std::async(std::launch::async, [&] { return ReadChunk(**cache, 1, &fetches, &got, &stats); });
  const bool ended = read.wait_for(kDeadline) == std::future_status::ready;
  holder.Release();
  const Status s = read.get();
  ASSERT_TRUE(ended) << "the read waited for the stopped holder";
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got, ChunkBytes(1));
  EXPECT_EQ(stats.uncached_reads.load(), 1u);  // Downloaded, not stored.
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 0u);
  // With the holder gone, the cache stores the chunk again.
  ASSERT_TRUE(ReadChunk(**cache, 1, &fetches, &got, &stats).ok());
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(*(*cache)->BytesOnDisk(), ChunkBytes(1).size());
}

}  // namespace
}  // namespace tokpack
