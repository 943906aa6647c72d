// ChunkCache: a bounded on-disk cache of fixed-size chunks of remote objects,
// shared by every process on a node that uses the same directory.
//
// - One download per chunk per node: a per-chunk lock file (flock) is held
//   while a chunk is fetched; other processes wait, then read the file.
// - Every fetched chunk is verified against the manifest's xxh3 checksum; a
//   mismatch is fetched once more, then reported as DataLoss.
// - The chunks on disk never exceed the size limit: space is reserved under
//   a cache-wide lock, evicting the least recently used chunks first; a chunk
//   that a reader holds (shared flock) is not evicted. The count of bytes is
//   kept in the lock file, so a store scans no directory (CacheLedger).
// - A lock file exists only while its chunk is being fetched (see ChunkLock
//   in the .cc), so their number stays bounded.
// - Waits on another process's lock poll a cancel flag, and end after a
//   time limit: a holder that makes no progress (stopped, hung) costs a
//   download that goes uncached, never a reader that waits forever.
// - Warm reads come from this process's long-lived mappings of the chunk
//   files (ChunkMappings), each holding its chunk's shared flock, so a
//   mapped chunk is not evicted. The mappings of one directory in a process
//   stay within half the size limit, least recently used released first
//   (see kMappedShare). A chunk's mtime, the cache's LRU clock, is touched
//   when it is stored or mapped, not on each read.
// - The cache is only for speed: a cache directory removed while in use is
//   made again (chunks mapped from the removed one stay readable); a chunk
//   the cache cannot store (disk full, read-only, over quota, larger than
//   the limit) is served from memory once verified, counted in
//   ReadStats::uncached_reads, with one warning on stderr.
// Thread-safe and process-safe.
#ifndef TOKPACK_SRC_STORAGE_CHUNK_CACHE_H_
#define TOKPACK_SRC_STORAGE_CHUNK_CACHE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "storage/chunk_mappings.h"
#include "tokpack/cancel.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

class CacheLedger;

class ChunkCache {
 public:
  // How Read() waits for a lock that another process holds.
  struct LockWait {
    // Past this, the chunk is read without the cache (counted, warned).
    std::chrono::milliseconds limit{std::chrono::seconds(20)};
    // When set and true, the wait ends as Cancelled (see StorageOptions::cancel).
    CancelFlag cancel;
  };

  // The directory is created if needed. limit_bytes must be positive. Any
  // number of ChunkCaches (in one process or many) may share a directory:
  // they coordinate only through its lock files.
  static StatusOr<std::shared_ptr<ChunkCache>> Open(const std::string& dir, uint64_t limit_bytes,
                                                    LockWait wait);
  // With the default LockWait.
  static StatusOr<std::shared_ptr<ChunkCache>> Open(const std::string& dir, uint64_t limit_bytes);

  // Fills *out with the whole chunk; used only on a miss.
  using Fetch = std::function<Status(std::string* out)>;
  // A whole chunk, pinned: its bytes stay valid (and, when mapped, the chunk
  // stays in the cache) while any copy of the pin lives.
  using Pin = std::shared_ptr<const char>;

  // The share of the size limit that one process may keep mapped. Half: a
  // process in shuffle="window" reads one window while the next is
  // prefetched, and the window is sized so that two fit the cache
  // (docs/reader.md); the processes of a node read the same window, so their
  // mappings overlap, and the other half stays evictable for the
  // prefetches. More would keep the next window's chunks out of the cache;
  // less would have a window's reads map and unmap chunks over and over.
  static constexpr uint64_t kMappedShare = 2;  // limit / kMappedShare.

  // Chunk `key` (`size` bytes, checksum `xxh3`) whole, pinned: from this
  // process's mapping, else mapped from the cache, else fetched, verified,
  // stored and mapped; a chunk the cache cannot store is pinned in memory.
  // `name`, `fetch` and `stats` as for Read().
  StatusOr<Pin> Map(const std::string& key, const std::string& name, uint64_t size, uint64_t xxh3,
                    const Fetch& fetch, ReadStats* stats);
  // This process's mapping of chunk `key`, counted as a hit, or null: the
  // warm path, which needs no name or fetch.
  Pin FindMapped(const std::string& key, ReadStats* stats);
  // The epoch of this process's mappings (ChunkMappings::epoch()): a chunk
  // that FindMapped() found at epoch E stays mapped while it is E.
  uint64_t mapping_epoch() const { return mappings_->epoch(); }

  // Copies bytes [offset, offset + n) of chunk `key` (`size` bytes, checksum
  // `xxh3`) into `dst`, fetching it first if it is not cached (as Map()).
  // With n == 0 it only makes sure the chunk is cached (a prefetch), without
  // mapping it. `name` names the chunk in errors (e.g.
  // "s3://b/d/shard-00000.bin chunk 3"). The hit or download is counted in
  // `*stats` (may be null). Cancelled when the LockWait's flag is raised
  // while it waits for a lock.
  Status Read(const std::string& key, const std::string& name, uint64_t size, uint64_t xxh3,
              uint64_t offset, uint64_t n, char* dst, const Fetch& fetch, ReadStats* stats);

  // Bytes of chunks on disk (temporaries of dead writers included).
  StatusOr<uint64_t> BytesOnDisk() const;

 private:
  ChunkCache(std::string dir, uint64_t limit, LockWait wait);
  // Map(), or with `map` false only makes sure the chunk is cached (the pin
  // is then null).
  StatusOr<Pin> Get(const std::string& key, const std::string& name, uint64_t size, uint64_t xxh3,
                    const Fetch& fetch, ReadStats* stats, bool map);
  // The chunk at `path` if it is on disk whole: *hit, its mtime touched and,
  // with `map`, mapped into *pin.
  Status OpenCached(const std::string& key, const std::string& path, uint64_t size, bool map,
                    Pin* pin, bool* hit);
  Status Store(const std::string& key, const std::string& data);
  // Warns on stderr the first time a chunk goes uncached.
  void WarnUncached(const Status& why);

  std::string dir_;
  uint64_t limit_;
  LockWait wait_;
  std::shared_ptr<ChunkMappings> mappings_;
  std::shared_ptr<CacheLedger> ledger_;  // The directory's byte count and eviction order.
  std::atomic<bool> warned_{false};
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CHUNK_CACHE_H_
