// CacheLedger through ChunkCache: the byte count kept in cache.lock stays
// what is on disk across stores, evictions and processes, and a count that
// is missing or damaged is recounted, not trusted.
#include "storage/cache_ledger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/chunk_hasher.h"
#include "storage/chunk_cache.h"
#include "tests/test_util.h"

namespace tokpack {
namespace {

using testing::TempDir;

std::string ChunkBytes(int k, size_t n = 1000) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((k * 131 + i * 7) & 0xff);
  return s;
}

// Makes sure chunk k ("obj-k") is cached (a prefetch: nothing mapped).
Status Fetch(ChunkCache& cache, int k) {
  const std::string want = ChunkBytes(k);
  return cache.Read(
      "obj-" + std::to_string(k), "chunk " + std::to_string(k), want.size(), Xxh3(want), 0, 0,
      nullptr,
      [&](std::string* data) {
        *data = want;
        return Status::Ok();
      },
      nullptr);
}

// The count that cache.lock records, or -1 if it records none.
int64_t Recorded(const std::string& dir) {
  std::ifstream in(dir + "/cache.lock");
  std::string word1, word2, word3;
  int64_t bytes = -1;
  in >> word1 >> word2 >> word3 >> bytes;
  return word1 == "tokpack" && word3 == "bytes" ? bytes : -1;
}

TEST(CacheLedger, TheRecordedCountIsTheBytesOnDiskAfterEveryStoreAndEviction) {
  TempDir dir;
  const std::string c = dir.Join("c");
  auto cache = ChunkCache::Open(c, 10500);  // Ten chunks of 1000.
  ASSERT_TRUE(cache.ok());
  for (int k = 0; k < 60; ++k) {
    ASSERT_TRUE(Fetch(**cache, k).ok()) << k;
    const uint64_t on_disk = *(*cache)->BytesOnDisk();
    EXPECT_LE(on_disk, 10500u) << k;
    EXPECT_EQ(Recorded(c), static_cast<int64_t>(on_disk)) << k;
  }
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 10000u);
}

TEST(CacheLedger, TwoProcessesStoringAndEvictingKeepOneCount) {
  TempDir dir;
  const std::string c = dir.Join("c");
  // Each process stores its own 150 chunks into a cache of 20: both evict
  // chunks the other stored, which only the shared count can know of.
  std::vector<pid_t> children;
  for (int p = 0; p < 2; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = ChunkCache::Open(c, 20500);
      if (!cache.ok()) _exit(2);
      for (int i = 0; i < 150; ++i) {
        if (!Fetch(**cache, p * 1000 + i).ok()) _exit(3);
        if (*(*cache)->BytesOnDisk() > 20500u) _exit(4);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto cache = ChunkCache::Open(c, 20500);
  ASSERT_TRUE(cache.ok());
  EXPECT_EQ(Recorded(c), static_cast<int64_t>(*(*cache)->BytesOnDisk()));
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 20000u);
}

TEST(CacheLedger, AMissingOrDamagedCountIsRecountedFromTheDirectory) {
  TempDir dir;
  const std::string c = dir.Join("c");
  auto cache = ChunkCache::Open(c, 1 << 20);
  ASSERT_TRUE(cache.ok());
  ASSERT_TRUE(Fetch(**cache, 0).ok());
  ASSERT_EQ(Recorded(c), 1000);
  // An older tokpack's empty lock file, or a torn write: not trusted.
  std::ofstream(c + "/cache.lock", std::ios::trunc) << "tokpack cache by";
  // A chunk file that no count knows of (copied in by hand).
  std::ofstream(c + "/chunks/obj-extra") << std::string(500, 'x');
  ASSERT_TRUE(Fetch(**cache, 1).ok());
  EXPECT_EQ(Recorded(c), 2500);
  EXPECT_EQ(*(*cache)->BytesOnDisk(), 2500u);
}

TEST(CacheLedger, AStoreThatCannotWriteGivesItsReservationBack) {
  TempDir dir;
  const std::string c = dir.Join("c");
  auto cache = ChunkCache::Open(c, 1 << 20);
  ASSERT_TRUE(cache.ok());
  ASSERT_TRUE(Fetch(**cache, 0).ok());
  // A directory where the temporary would go: the write fails, the chunk is
  // served uncached, and the count stays as it was.
  ASSERT_EQ(::mkdir((c + "/chunks/.tmp-obj-1").c_str(), 0755), 0);
  ASSERT_TRUE(Fetch(**cache, 1).ok());
  EXPECT_EQ(Recorded(c), 1000);
  ::rmdir((c + "/chunks/.tmp-obj-1").c_str());
}

}  // namespace
}  // namespace tokpack
