// CacheLedger: the bookkeeping of the bytes in a ChunkCache directory, so
// that storing a chunk costs no scan of the directory (a scan per store
// made a run's stores quadratic in the chunks cached).
//
// The cross-process rule is the cache's own: space is reserved, and chunks
// evicted, only under the cache-wide lock (cache.lock, LOCK_EX), so the
// bytes on disk never pass the limit whatever the processes do. What
// changes is where the count lives:
// - The bytes of the directory's chunks are recorded in cache.lock itself,
//   read and rewritten under that lock by whichever process stores or
//   evicts. A lock file that records nothing (a new cache, one removed while
//   in use, one written by an older tokpack, a torn write) is recounted by
//   one scan, which also removes the temporaries of writers that died.
// - A store reserves its bytes before writing, and gives them back if the
//   write fails: a writer killed midway leaves the count too high, never too
//   low, until the next scan.
// - Eviction takes candidates, oldest first, from this process's list of
//   the directory's chunks: made by a scan when it runs dry and appended to
//   by this process's stores. A candidate whose mtime moved on since (used),
//   or that a reader holds (shared flock), goes to the back of the list
//   (second chance); one already gone (another process evicted it) is
//   dropped. So eviction is least recently used first, approximately, and a
//   store evicting costs amortized O(1) file operations. Each scan also
//   resets the recorded count to what is on disk, so a count off by chunks
//   removed by hand, or stored by a tokpack that does not keep it, comes
//   right at the next scan.
// One ledger per directory per process (ForDirectory); every method must be
// called with the cache-wide lock held. Thread-safe.
#ifndef TOKPACK_SRC_STORAGE_CACHE_LEDGER_H_
#define TOKPACK_SRC_STORAGE_CACHE_LEDGER_H_

#include <sys/stat.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "storage/cache_files.h"
#include "tokpack/status.h"

namespace tokpack {

class CacheLedger {
 public:
  // The ledger of cache directory `dir` (with chunks/ and cache.lock) in this
  // process (a forked child gets its own), made on first use.
  static std::shared_ptr<CacheLedger> ForDirectory(const std::string& dir);
  explicit CacheLedger(std::string dir) : dir_(std::move(dir)) {}

  // The chunks' bytes that `lock` (cache.lock, held LOCK_EX) records, or,
  // if it records none, the bytes a scan finds (temporaries removed).
  StatusOr<uint64_t> Load(const LockedFile& lock);
  // Records `bytes` in `lock`.
  Status Save(const LockedFile& lock, uint64_t bytes);
  // Evicts chunks, least recently used first and none that a reader holds,
  // until *bytes + needed <= limit; *bytes drops by what went. False (and
  // *bytes as far as it got) when every chunk left is in use.
  StatusOr<bool> EvictFor(uint64_t needed, uint64_t limit, uint64_t* bytes);
  // Chunk `name` (in chunks/) was stored now: the newest candidate.
  void Stored(const std::string& name);

  // Bytes of the files in `chunks` (a directory), temporaries included; 0
  // if it does not exist.
  static StatusOr<uint64_t> BytesIn(const std::string& chunks);

 private:
  struct Candidate {
    struct timespec mtime;  // When it was last seen used.
    std::string name;
  };
  // Lists the chunks oldest first into candidates_ and returns their bytes
  // (temporaries removed: the cache-wide lock is held).
  StatusOr<uint64_t> Rescan();

  const std::string dir_;
  std::mutex mu_;  // The cache-wide lock orders processes; this, threads.
  std::deque<Candidate> candidates_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CACHE_LEDGER_H_
