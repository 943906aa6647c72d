// The files and flocks through which the processes sharing a ChunkCache
// coordinate: a descriptor with an optional flock (LockedFile), the lock of
// one chunk's download (ChunkLock), and the sweep of lock files whose
// holders died (RemoveStaleLocks).
#ifndef TOKPACK_SRC_STORAGE_CACHE_FILES_H_
#define TOKPACK_SRC_STORAGE_CACHE_FILES_H_

#include <functional>
#include <string>

#include "storage/chunk_cache.h"
#include "tokpack/status.h"

namespace tokpack {

// An open file descriptor with an optional flock, released on destruction.
class LockedFile {
 public:
  LockedFile() = default;
  ~LockedFile() { Close(); }  // Also drops the flock.
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  // Opens `path` (O_CLOEXEC added, mode 0644 when created); errors name it.
  Status Open(const std::string& path, int flags);
  void Close();
  // Whether `path()` still names the open file (it may have been removed, or
  // replaced by another file, since it was opened).
  bool StillLinked() const;
  // flock(op); FailedPrecondition when op has LOCK_NB and another holds it.
  Status Lock(int op);
  // Lock(op) that another process may hold: polled (a blocking flock would
  // ignore the cancel flag and wait forever on a stopped holder), sleeping
  // 1 ms doubling to 50 ms between tries. Cancelled when `wait.cancel` is
  // raised; DeadlineExceeded after `wait.limit`.
  Status Lock(int op, const ChunkCache::LockWait& wait);
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// The lock of one chunk's download: a file in locks/ that exists only while
// it is held, so lock files do not pile up. The holder removes the file
// before it lets go; a waiter that then gets the lock of the removed file
// (or of one replaced since) sees that the path no longer names it and tries
// again. So at most one process holds the lock of the file the path names.
// (Were the directory removed under a holder, a chunk could at worst be
// downloaded twice; its stores stay atomic.)
class ChunkLock {
 public:
  ChunkLock() = default;
  ~ChunkLock();
  ChunkLock(const ChunkLock&) = delete;
  ChunkLock& operator=(const ChunkLock&) = delete;

  // `open` opens (creating) the lock file into its argument.
  Status Acquire(const std::function<Status(LockedFile*)>& open, const ChunkCache::LockWait& wait);

 private:
  LockedFile file_;
  bool held_ = false;
};

// Removes the lock files in `locks` that nobody holds: those of fetchers
// that died. A file that someone has opened but not yet locked may go too;
// its opener then finds it unlinked and tries again (see ChunkLock).
void RemoveStaleLocks(const std::string& locks);

}  // namespace tokpack

#endif  // TOKPACK_SRC_STORAGE_CACHE_FILES_H_
