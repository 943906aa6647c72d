#include "storage/chunk_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <utility>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "storage/cache_files.h"
#include "storage/cache_ledger.h"

namespace tokpack {
namespace {

Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status MakeCacheDirs(const std::string& dir) {
  TOKPACK_RETURN_IF_ERROR(CreateDirs(JoinPath(dir, "chunks")));
  return CreateDirs(JoinPath(dir, "locks"));
}

// Opens (creating) `path` in the cache in `dir`. A cache directory removed
// while in use (rm -rf) is made again.
Status OpenCreating(const std::string& dir, const std::string& path, int flags, LockedFile* f) {
  Status s = f->Open(path, flags | O_CREAT);
  if (s.code() != StatusCode::kNotFound) return s;
  TOKPACK_RETURN_IF_ERROR(MakeCacheDirs(dir));
  return f->Open(path, flags | O_CREAT);
}

}  // namespace

StatusOr<std::shared_ptr<ChunkCache>> ChunkCache::Open(const std::string& dir,
                                                       uint64_t limit_bytes) {
  return Open(dir, limit_bytes, LockWait());
}

StatusOr<std::shared_ptr<ChunkCache>> ChunkCache::Open(const std::string& dir, uint64_t limit_bytes,
                                                       LockWait wait) {
  if (limit_bytes == 0) return InvalidArgumentError("the cache size limit must be positive");
  TOKPACK_RETURN_IF_ERROR(MakeCacheDirs(dir));
  return std::shared_ptr<ChunkCache>(new ChunkCache(dir, limit_bytes, std::move(wait)));
}

void ChunkCache::WarnUncached(const Status& why) {
  if (warned_.exchange(true)) return;
  std::fprintf(stderr,
               "tokpack: warning: the chunk cache in %s cannot store chunks (%s); reading "
               "uncached: each read downloads its chunk again\n",
               dir_.c_str(), why.ToString().c_str());
}

ChunkCache::ChunkCache(std::string dir, uint64_t limit, LockWait wait)
    : dir_(std::move(dir)),
      limit_(limit),
      wait_(std::move(wait)),
      mappings_(ChunkMappings::ForDirectory(dir_)),
      ledger_(CacheLedger::ForDirectory(dir_)) {}

Status ChunkCache::OpenCached(const std::string& key, const std::string& path, uint64_t size,
                              bool map, Pin* pin, bool* hit) {
  *hit = false;
  LockedFile f;
  if (!f.Open(path, O_RDONLY).ok()) return Status::Ok();  // Not cached.
  // Shared: an evictor (exclusive, non-blocking) skips a chunk being read,
  // or mapped (the mapping keeps the lock). An evictor that stopped while
  // it holds the chunk: a miss.
  const Status locked = f.Lock(LOCK_SH, wait_);
  if (locked.code() == StatusCode::kDeadlineExceeded) return Status::Ok();
  TOKPACK_RETURN_IF_ERROR(locked);
  // Evicted between open and lock (a mapping would hold its space outside
  // the cache's count), or not whole: a miss, fetched and stored again.
  struct stat st;
  if (::fstat(f.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) != size || !f.StillLinked()) {
    return Status::Ok();
  }
  if (map) {
    TOKPACK_ASSIGN_OR_RETURN(std::shared_ptr<ChunkMapping> m,
                             ChunkMapping::Map(f.fd(), size, path));
    std::shared_ptr<const ChunkMapping> added =
        mappings_->Add(key, std::move(m), limit_ / kMappedShare);
    *pin = Pin(added, added->data());
  }
  ::futimens(f.fd(), nullptr);  // Recently used: once per mapping, not per read.
  *hit = true;
  return Status::Ok();
}

ChunkCache::Pin ChunkCache::FindMapped(const std::string& key, ReadStats* stats) {
  std::shared_ptr<const ChunkMapping> m = mappings_->Find(key);
  if (m == nullptr) return nullptr;
  if (stats != nullptr) stats->cache_hits++;
  return Pin(m, m->data());
}

StatusOr<ChunkCache::Pin> ChunkCache::Map(const std::string& key, const std::string& name,
                                          uint64_t size, uint64_t xxh3, const Fetch& fetch,
                                          ReadStats* stats) {
  return Get(key, name, size, xxh3, fetch, stats, true);
}

Status ChunkCache::Read(const std::string& key, const std::string& name, uint64_t size,
                        uint64_t xxh3, uint64_t offset, uint64_t n, char* dst, const Fetch& fetch,
                        ReadStats* stats) {
  if (offset > size || n > size - offset) {
    return OutOfRangeError(name + ": bytes past the end of the chunk");
  }
  // A prefetch (n == 0) maps nothing: mappings are for the chunks being read.
  TOKPACK_ASSIGN_OR_RETURN(Pin chunk, Get(key, name, size, xxh3, fetch, stats, n > 0));
  if (n > 0) std::copy_n(chunk.get() + offset, n, dst);
  return Status::Ok();
}

StatusOr<ChunkCache::Pin> ChunkCache::Get(const std::string& key, const std::string& name,
                                          uint64_t size, uint64_t xxh3, const Fetch& fetch,
                                          ReadStats* stats, bool map) {
  ReadStats unused;
  ReadStats& counters = stats ? *stats : unused;
  if (Pin mapped = FindMapped(key, &counters)) return mapped;
  const std::string path = JoinPath(JoinPath(dir_, "chunks"), key);
  Pin pin;
  bool hit = false;
  TOKPACK_RETURN_IF_ERROR(OpenCached(key, path, size, map, &pin, &hit));
  if (hit) {
    counters.cache_hits++;
    return pin;
  }
  // One download per node: whoever holds the chunk's lock fetches it. A
  // cache where no lock file can be made, or whose lock another process
  // holds past the wait limit, is read without one (uncached).
  ChunkLock lock;
  const Status locked = lock.Acquire(
      [&](LockedFile* f) {
        return OpenCreating(dir_, JoinPath(JoinPath(dir_, "locks"), key), O_RDWR, f);
      },
      wait_);
  if (locked.code() == StatusCode::kCancelled) return locked;
  if (locked.ok()) {
    TOKPACK_RETURN_IF_ERROR(OpenCached(key, path, size, map, &pin, &hit));
    if (hit) {
      counters.cache_hits++;  // Another process fetched it meanwhile.
      return pin;
    }
  }
  auto data = std::make_shared<std::string>();
  for (int attempt = 0;; ++attempt) {
    data->clear();
    const auto t0 = std::chrono::steady_clock::now();
    TOKPACK_RETURN_IF_ERROR(fetch(data.get()));
    counters.cache_misses++;
    counters.bytes_fetched += data->size();
    counters.fetch_micros += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    if (data->size() == size && Xxh3(*data) == xxh3) break;
    if (attempt == 1) {
      return DataLossError(name + ": fetched twice and both copies fail its checksum (" +
                           std::to_string(data->size()) + " of " + std::to_string(size) +
                           " bytes); the remote object differs from the manifest");
    }
  }
  // A cache that cannot take the chunk (disk full, over quota, read-only,
  // not permitted, smaller than the chunk) costs speed, not the read: the
  // verified chunk is served from memory.
  const Status stored = locked.ok() ? Store(key, *data) : locked;
  if (stored.code() == StatusCode::kCancelled) return stored;
  if (!stored.ok()) {
    counters.uncached_reads++;
    WarnUncached(stored);
  } else if (map) {
    // Mapped for the reads to come. Evicted by another process since the
    // store (unlikely): served from memory this once.
    TOKPACK_RETURN_IF_ERROR(OpenCached(key, path, size, true, &pin, &hit));
    if (hit) return pin;
  }
  if (!map) return Pin();
  return Pin(data, data->data());
}

Status ChunkCache::Store(const std::string& key, const std::string& data) {
  if (data.size() > limit_) {
    return Status(StatusCode::kResourceExhausted,
                  "a chunk of " + std::to_string(data.size()) + " bytes does not fit the cache " +
                      "limit of " + std::to_string(limit_) +
                      " bytes (StorageOptions::cache_bytes, TOKPACK_CACHE_BYTES)");
  }
  // Space is reserved, and the file written, under the cache-wide lock, so
  // the bytes on disk never pass the limit, whatever other processes do;
  // the count of them is in the lock file (CacheLedger), not rescanned.
  LockedFile global;
  TOKPACK_RETURN_IF_ERROR(OpenCreating(dir_, JoinPath(dir_, "cache.lock"), O_RDWR, &global));
  TOKPACK_RETURN_IF_ERROR(global.Lock(LOCK_EX, wait_));
  // A lock file that nobody holds is from a fetcher that died.
  RemoveStaleLocks(JoinPath(dir_, "locks"));
  TOKPACK_ASSIGN_OR_RETURN(uint64_t bytes, ledger_->Load(global));
  const std::string path = JoinPath(JoinPath(dir_, "chunks"), key);
  // A copy already there (evicted between a reader's open and lock, then
  // stored again by another process) is replaced: its bytes go.
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) bytes -= std::min(bytes, static_cast<uint64_t>(st.st_size));
  TOKPACK_ASSIGN_OR_RETURN(bool room, ledger_->EvictFor(data.size(), limit_, &bytes));
  if (!room) {
    // Full of chunks in use: this process's own mappings may be what holds
    // them. Let them go (they are mapped again when read) and try again.
    mappings_->ReleaseAll();
    TOKPACK_ASSIGN_OR_RETURN(room, ledger_->EvictFor(data.size(), limit_, &bytes));
  }
  if (!room) {
    TOKPACK_RETURN_IF_ERROR(ledger_->Save(global, bytes));
    return Status(StatusCode::kResourceExhausted,
                  "the chunk cache in " + dir_ + " is full of chunks in use (limit " +
                      std::to_string(limit_) +
                      " bytes); raise StorageOptions::cache_bytes (TOKPACK_CACHE_BYTES)");
  }
  // Reserved before the write: a writer that dies midway leaves the count
  // high (safe) until the next scan, never low.
  TOKPACK_RETURN_IF_ERROR(ledger_->Save(global, bytes + data.size()));
  const std::string tmp = JoinPath(dir_, "chunks/.tmp-" + key);
  LockedFile out;
  Status s = OpenCreating(dir_, tmp, O_WRONLY | O_TRUNC, &out);
  if (s.ok()) s = WriteAll(out.fd(), data.data(), data.size(), tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) s = ErrnoToStatus(errno, "rename", tmp);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    TOKPACK_RETURN_IF_ERROR(ledger_->Save(global, bytes));
    return s;
  }
  ledger_->Stored(key);
  return Status::Ok();
}

StatusOr<uint64_t> ChunkCache::BytesOnDisk() const {
  return CacheLedger::BytesIn(JoinPath(dir_, "chunks"));
}

}  // namespace tokpack
