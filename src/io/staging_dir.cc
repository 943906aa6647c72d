#include "io/staging_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "tokpack/manifest.h"

namespace tokpack {
namespace {

constexpr char kPending[] = "manifest.json.pending";

constexpr char kLockFile[] = ".tokpack-build.lock";

// Removes staging directories "<prefix>*" in `parent` whose writer is gone:
// their lock file exists and nobody holds it. Directories without one (being
// created right now, or older than the lock) are left alone.
void RemoveAbandonedStagingDirs(const std::string& parent, const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !entry.is_directory(ec)) continue;
    const std::string lock_path = JoinPath(entry.path().string(), kLockFile);
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) RemoveAllQuietly(entry.path().string());
    ::close(fd);
  }
}

bool IsEmptyDir(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_empty(dir, ec) && !ec;
}

}  // namespace

StatusOr<std::unique_ptr<StagingDir>> StagingDir::Create(const std::string& output_in, bool force) {
  std::string output = output_in;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  if (output.empty()) return InvalidArgumentError("no output directory given");
  struct stat st;
  if (::stat(output.c_str(), &st) == 0) {
    if (!force) {
      return AlreadyExistsError("output '" + output +
                                "' already exists; pass --force to replace it");
    }
    if (!S_ISDIR(st.st_mode)) {
      return FailedPreconditionError("output '" + output + "' exists and is not a directory");
    }
    // manifest.json.pending alone: a writer died between its last two renames.
    if (!IsEmptyDir(output) && ::access(JoinPath(output, Manifest::kFileName).c_str(), F_OK) != 0 &&
        ::access(JoinPath(output, kPending).c_str(), F_OK) != 0) {
      return FailedPreconditionError("output '" + output +
                                     "' exists and is not a tokpack dataset (no "
                                     "manifest.json); refusing to replace it even with --force");
    }
  } else if (errno != ENOENT) {
    return ErrnoToStatus(errno, "stat", output);
  }
  std::filesystem::path p(output);
  std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string name = p.filename().string();
  TOKPACK_RETURN_IF_ERROR(CreateDirs(parent));
  RemoveAbandonedStagingDirs(parent, "." + name + ".tokpack-tmp-");
  std::string tmpl = JoinPath(parent, "." + name + ".tokpack-tmp-XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return ErrnoToStatus(errno, "create a staging directory in", parent);
  }
  // Held for the life of the build, so a later build can tell an abandoned
  // staging directory (a killed writer) from one in use.
  const int lock = ::open(JoinPath(tmpl, kLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    Status s = ErrnoToStatus(errno, "lock", JoinPath(tmpl, kLockFile));
    if (lock >= 0) ::close(lock);
    RemoveAllQuietly(tmpl);
    return s;
  }
  // mkdtemp makes it 0700; a dataset is usually shared, so honour the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::chmod(tmpl.c_str(), 0777 & ~mask) != 0) {
    Status s = ErrnoToStatus(errno, "chmod", tmpl);
    ::close(lock);
    RemoveAllQuietly(tmpl);
    return s;
  }
  auto dir = std::unique_ptr<StagingDir>(new StagingDir(output, parent, tmpl));
  dir->lock_fd_ = lock;
  return dir;
}

StagingDir::~StagingDir() {
  if (!committed_) RemoveAllQuietly(staging_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

Status StagingDir::Commit(FileSystem* fs, const std::string& manifest_json) {
  {
    TOKPACK_ASSIGN_OR_RETURN(auto f, fs->NewWritableFile(JoinPath(staging_, kPending)));
    TOKPACK_RETURN_IF_ERROR(f->Append(manifest_json));
    TOKPACK_RETURN_IF_ERROR(f->Close());
  }
  TOKPACK_RETURN_IF_ERROR(fs->SyncDir(staging_));
  std::string old;
  if (::access(output_.c_str(), F_OK) == 0) {
    static std::atomic<int> counter{0};
    old = staging_ + "-old" + std::to_string(counter++);
    TOKPACK_RETURN_IF_ERROR(fs->Rename(output_, old));
  }
  Status s = fs->Rename(staging_, output_);
  if (!s.ok()) {
    if (!old.empty()) fs->Rename(old, output_).IgnoreError();  // Put the old one back.
    return s;
  }
  committed_ = true;
  ::unlink(JoinPath(output_, kLockFile).c_str());  // The lock travelled with the directory.
  s = fs->Rename(JoinPath(output_, kPending), JoinPath(output_, Manifest::kFileName));
  if (s.ok()) s = fs->SyncDir(output_);
  if (s.ok()) s = fs->SyncDir(parent_);
  // On failure the previous dataset stays at `old` rather than being lost.
  if (s.ok() && !old.empty()) RemoveAllQuietly(old);
  return s;
}

}  // namespace tokpack
