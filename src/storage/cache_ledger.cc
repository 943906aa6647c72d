#include "storage/cache_ledger.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "base/file_system.h"

namespace tokpack {
namespace {

// cache.lock's content: fixed width, so a rewrite leaves no old digits.
constexpr char kRecordFormat[] = "tokpack cache bytes %020" PRIu64 "\n";
constexpr size_t kRecordBytes = 41;

bool Newer(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec > b.tv_sec : a.tv_nsec > b.tv_nsec;
}

}  // namespace

std::shared_ptr<CacheLedger> CacheLedger::ForDirectory(const std::string& dir) {
  static std::mutex mu;
  static auto* ledgers = new std::map<std::pair<pid_t, std::string>, std::weak_ptr<CacheLedger>>();
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = ledgers->begin(); it != ledgers->end();) {
    it = it->second.expired() ? ledgers->erase(it) : std::next(it);
  }
  std::weak_ptr<CacheLedger>& slot = (*ledgers)[{::getpid(), dir}];
  std::shared_ptr<CacheLedger> ledger = slot.lock();
  if (!ledger) {
    ledger = std::make_shared<CacheLedger>(dir);
    slot = ledger;
  }
  return ledger;
}

StatusOr<uint64_t> CacheLedger::Load(const LockedFile& lock) {
  char buf[kRecordBytes + 1] = {};
  const ssize_t n = ::pread(lock.fd(), buf, kRecordBytes, 0);
  uint64_t bytes = 0;
  if (n == static_cast<ssize_t>(kRecordBytes) && buf[kRecordBytes - 1] == '\n' &&
      std::sscanf(buf, "tokpack cache bytes %20" SCNu64, &bytes) == 1) {
    return bytes;
  }
  std::lock_guard<std::mutex> guard(mu_);
  return Rescan();
}

Status CacheLedger::Save(const LockedFile& lock, uint64_t bytes) {
  char buf[kRecordBytes + 1];
  std::snprintf(buf, sizeof(buf), kRecordFormat, bytes);
  if (::pwrite(lock.fd(), buf, kRecordBytes, 0) != static_cast<ssize_t>(kRecordBytes)) {
    return ErrnoToStatus(errno, "write", lock.path());
  }
  return Status::Ok();
}

void CacheLedger::Stored(const std::string& name) {
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::lock_guard<std::mutex> guard(mu_);
  candidates_.push_back({now, name});
}

StatusOr<bool> CacheLedger::EvictFor(uint64_t needed, uint64_t limit, uint64_t* bytes) {
  std::lock_guard<std::mutex> guard(mu_);
  const std::string chunks = JoinPath(dir_, "chunks");
  bool rescanned = false;
  size_t passed = 0;  // Candidates sent to the back since the last eviction.
  while (*bytes + needed > limit) {
    if (candidates_.empty() || passed >= candidates_.size()) {
      if (rescanned) return false;  // All looked at, twice: every one in use.
      TOKPACK_ASSIGN_OR_RETURN(*bytes, Rescan());
      rescanned = true;
      passed = 0;
      continue;
    }
    Candidate c = std::move(candidates_.front());
    candidates_.pop_front();
    const std::string path = JoinPath(chunks, c.name);
    LockedFile f;
    struct stat st;
    if (!f.Open(path, O_RDONLY).ok() || ::fstat(f.fd(), &st) != 0) continue;  // Gone.
    // Used since it was listed (mapped: mtime touched), or being read now:
    // a second chance, at the back.
    if (Newer(st.st_mtim, c.mtime) || !f.Lock(LOCK_EX | LOCK_NB).ok()) {
      c.mtime = st.st_mtim;
      candidates_.push_back(std::move(c));
      ++passed;
      continue;
    }
    if (!f.StillLinked()) continue;  // Replaced since: the new one is listed by its store.
    if (::unlink(path.c_str()) == 0) {
      *bytes -= std::min(*bytes, static_cast<uint64_t>(st.st_size));
      passed = 0;
    }
  }
  return true;
}

StatusOr<uint64_t> CacheLedger::Rescan() {
  const std::string chunks = JoinPath(dir_, "chunks");
  // Temporaries are written only under the cache-wide lock, which is held:
  // any found are from writers that died.
  candidates_.clear();
  DIR* d = ::opendir(chunks.c_str());
  if (d == nullptr && errno == ENOENT) return 0;  // Removed: made again on the next store.
  if (d == nullptr) return ErrnoToStatus(errno, "opendir", chunks);
  std::vector<Candidate> found;
  uint64_t total = 0;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(".tmp-", 0) == 0) {
      ::unlinkat(::dirfd(d), e->d_name, 0);
      continue;
    }
    struct stat st;
    if (name[0] == '.' || ::fstatat(::dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    total += static_cast<uint64_t>(st.st_size);
    found.push_back({st.st_mtim, name});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Candidate& a, const Candidate& b) { return Newer(b.mtime, a.mtime); });
  candidates_.assign(std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
  return total;
}

StatusOr<uint64_t> CacheLedger::BytesIn(const std::string& chunks) {
  DIR* d = ::opendir(chunks.c_str());
  if (d == nullptr && errno == ENOENT) return 0;  // Removed: made again on the next store.
  if (d == nullptr) return ErrnoToStatus(errno, "opendir", chunks);
  uint64_t total = 0;
  while (dirent* e = ::readdir(d)) {
    struct stat st;
    if (std::string(e->d_name) != "." && std::string(e->d_name) != ".." &&
        ::fstatat(::dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_size);
    }
  }
  ::closedir(d);
  return total;
}

}  // namespace tokpack
