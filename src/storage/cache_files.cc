#include "storage/cache_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "base/file_system.h"

namespace tokpack {

Status LockedFile::Open(const std::string& path, int flags) {
  Close();
  fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd_ < 0) return ErrnoToStatus(errno, "open", path);
  path_ = path;
  return Status::Ok();
}

void LockedFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LockedFile::StillLinked() const {
  struct stat open_st, path_st;
  return ::fstat(fd_, &open_st) == 0 && ::stat(path_.c_str(), &path_st) == 0 &&
         open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino;
}

Status LockedFile::Lock(int op) {
  while (::flock(fd_, op) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) return FailedPreconditionError(path_ + " is locked");
    return ErrnoToStatus(errno, "flock", path_);
  }
  return Status::Ok();
}

Status LockedFile::Lock(int op, const ChunkCache::LockWait& wait) {
  const auto until = std::chrono::steady_clock::now() + wait.limit;
  std::chrono::milliseconds pause(1);
  while (true) {
    const Status s = Lock(op | LOCK_NB);
    if (s.code() != StatusCode::kFailedPrecondition) return s;
    if (wait.cancel && wait.cancel->load()) return CancelledError(path_ + ": cancelled");
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) {
      return Status(StatusCode::kDeadlineExceeded, path_ +
                                                       " stayed locked by another process for " +
                                                       std::to_string(wait.limit.count()) + " ms");
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(pause, until - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

ChunkLock::~ChunkLock() {
  if (held_) ::unlink(file_.path().c_str());  // Before close() drops the lock.
}

Status ChunkLock::Acquire(const std::function<Status(LockedFile*)>& open,
                          const ChunkCache::LockWait& wait) {
  while (true) {
    TOKPACK_RETURN_IF_ERROR(open(&file_));
    TOKPACK_RETURN_IF_ERROR(file_.Lock(LOCK_EX, wait));
    if (file_.StillLinked()) break;
  }
  held_ = true;
  return Status::Ok();
}

void RemoveStaleLocks(const std::string& locks) {
  DIR* d = ::opendir(locks.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    LockedFile f;
    if (f.Open(JoinPath(locks, e->d_name), O_RDONLY).ok() && f.Lock(LOCK_EX | LOCK_NB).ok() &&
        f.StillLinked()) {
      ::unlinkat(::dirfd(d), e->d_name, 0);
    }
  }
  ::closedir(d);
}

}  // namespace tokpack
