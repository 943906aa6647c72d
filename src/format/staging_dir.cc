#include "format/staging_dir.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "format/removed_list.h"
#include "tokpack/files.h"
#include "tokpack/manifest.h"

namespace tokpack {
namespace {

namespace stdfs = std::filesystem;

constexpr char kLockFile[] = ".tokpack-build.lock";
// Published by a last rename by earlier versions; a writer killed just
// before it left this without manifest.json.
constexpr char kPending[] = "manifest.json.pending";

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool HoldsDataset(const std::string& dir) {
  return Exists(JoinPath(dir, Manifest::kFileName)) || Exists(JoinPath(dir, kPending));
}

bool IsEmptyDir(const std::string& dir) {
  std::error_code ec;
  return stdfs::is_empty(dir, ec) && !ec;
}

// Removes `dir` with its lock file last, so that a remover killed midway
// leaves a directory the next writer still recognizes as abandoned.
void RemoveLockLast(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {  // A link is removed, never followed.
    ::unlink(dir.c_str());
    return;
  }
  std::error_code ec;
  for (const auto& entry : stdfs::directory_iterator(dir, ec)) {
    if (entry.path().filename() != kLockFile) stdfs::remove_all(entry.path(), ec);
  }
  ::unlink(JoinPath(dir, kLockFile).c_str());
  ::rmdir(dir.c_str());
}

// Whether `name` is one Create or Commit gives: `prefix`, mkdtemp's six
// characters, and "-old" for a dataset moved aside. Nothing longer: another
// output's leftovers (".a.tokpack-tmp-x.tokpack-tmp-XXXXXX" for output
// ".a.tokpack-tmp-x") or a user's copy must not match.
bool IsStagingName(const std::string& name, const std::string& prefix) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  std::string_view rest = std::string_view(name).substr(prefix.size());
  if (rest.size() == 10 && rest.substr(6) == "-old") rest.remove_suffix(4);
  return rest.size() == 6 &&
         std::all_of(rest.begin(), rest.end(), [](char c) { return std::isalnum(c & 0xff); });
}

// Creates and locks the lock file in `dir`: its fd, or -1 (errno set).
int LockIn(const std::string& dir) {
  const int fd =
      ::open(JoinPath(dir, kLockFile).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 || ::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  const int err = errno;
  ::close(fd);
  errno = err;
  return -1;
}

// Removes the leftovers in `parent` of writers of `output` that are gone:
// directories named as IsStagingName says whose lock file nobody holds: the
// staging directory of a killed writer, or a dataset its --force commit
// swapped out (locked by it before the swap). A dataset moved aside while
// the output is missing is kept: it is the only copy. A directory without a
// lock file is never removed: it is being created, or is not tokpack's.
void RemoveAbandoned(const std::string& parent, const std::string& prefix,
                     const std::string& output) {
  std::error_code ec;
  for (const auto& entry : stdfs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    if (!IsStagingName(name, prefix) ||
        entry.symlink_status(ec).type() != stdfs::file_type::directory) {
      continue;
    }
    const std::string dir = entry.path().string();
    const int fd = ::open(JoinPath(dir, kLockFile).c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && (!HoldsDataset(dir) || Exists(output))) {
      RemoveLockLast(dir);
    }
    ::close(fd);
  }
}

// What Create promises about the output, and Commit re-checks.
Status CheckExistingOutput(const std::string& output, bool force) {
  struct stat st;
  if (::lstat(output.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : ErrnoToStatus(errno, "stat", output);
  }
  // Replacing a link would swap the link itself out and then delete what it
  // points to.
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const stdfs::path target = stdfs::read_symlink(output, ec);
    return FailedPreconditionError("output '" + output + "' is a symbolic link" +
                                   (ec ? std::string() : " (to '" + target.string() + "')") +
                                   "; write to its target instead");
  }
  if (!force) {
    return AlreadyExistsError("output '" + output + "' already exists; pass --force to replace it");
  }
  if (!S_ISDIR(st.st_mode)) {
    return FailedPreconditionError("output '" + output + "' exists and is not a directory");
  }
  if (!IsEmptyDir(output) && !HoldsDataset(output)) {
    return FailedPreconditionError("output '" + output +
                                   "' exists and is not a tokpack dataset (no "
                                   "manifest.json); refusing to replace it even with --force");
  }
  return Status::Ok();
}

// rename(2) that never replaces `to`: 0 or an errno. Where the file system
// lacks RENAME_NOREPLACE, plain rename(2) after a check still never loses
// data: it refuses to replace a non-empty directory (or a file).
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  if (Exists(to)) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

// Where a path is: its absolute form with symlinks resolved (as far as it
// exists), and its device and inode when it exists.
struct Place {
  stdfs::path path;
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

Place At(stdfs::path resolved) {
  Place place;
  place.path = std::move(resolved);
  struct stat st;
  if (::stat(place.path.c_str(), &st) == 0) {
    place.exists = true;
    place.dev = st.st_dev;
    place.ino = st.st_ino;
  }
  return place;
}

Place Locate(const std::string& path) {
  std::error_code ec;
  stdfs::path abs = stdfs::absolute(path, ec);
  stdfs::path resolved = stdfs::weakly_canonical(abs, ec);
  if (ec) resolved = abs.lexically_normal();
  // "dir/" names "dir".
  if (resolved.filename().empty() && resolved != resolved.root_path()) {
    resolved = resolved.parent_path();
  }
  return At(std::move(resolved));
}

bool SamePlace(const Place& a, const Place& b) {
  if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
  return a.path == b.path;
}

// Whether `inner` is `outer` or lies anywhere under it.
bool IsWithin(const Place& inner, const Place& outer) {
  for (stdfs::path p = inner.path;; p = p.parent_path()) {
    if (SamePlace(p == inner.path ? inner : At(p), outer)) return true;
    if (p == p.parent_path()) return false;
  }
}

}  // namespace

Status CheckOutputIsNoInput(const std::string& output, const std::vector<std::string>& inputs) {
  if (inputs.empty()) return Status::Ok();
  const Place out = Locate(output);
  std::vector<Place> out_parents;  // An input among them holds the output.
  for (stdfs::path p = out.path; p != p.parent_path();) {
    p = p.parent_path();
    out_parents.push_back(At(p));
  }
  // Inputs are mostly files of a few directories: whether a directory lies
  // in the output is decided once.
  std::unordered_map<std::string, bool> dir_in_output;
  for (const std::string& input : inputs) {
    const Place in = Locate(input);
    const char* how = nullptr;
    if (SamePlace(in, out)) {
      how = "is";
    } else if (std::any_of(out_parents.begin(), out_parents.end(),
                           [&](const Place& p) { return SamePlace(p, in); })) {
      how = "lies inside";
    } else {
      const stdfs::path dir = in.path.parent_path();
      auto [it, added] = dir_in_output.emplace(dir.string(), false);
      if (added) it->second = IsWithin(At(dir), out);
      if (it->second) how = "contains";
    }
    if (how != nullptr) {
      return InvalidArgumentError("output '" + output + "' " + how + " the input '" + input +
                                  "'; write the output apart from the inputs (replacing it would "
                                  "delete them)");
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<StagingDir>> StagingDir::Create(const std::string& output_in, bool force,
                                                         std::vector<std::string> inputs) {
  std::string output = output_in;
  while (output.size() > 1 && output.back() == '/') output.pop_back();
  if (output.empty()) return InvalidArgumentError("no output directory given");
  TOKPACK_RETURN_IF_ERROR(CheckExistingOutput(output, force));
  TOKPACK_RETURN_IF_ERROR(CheckOutputIsNoInput(output, inputs));
  stdfs::path p(output);
  std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string name = p.filename().string();
  TOKPACK_RETURN_IF_ERROR(CreateDirs(parent));
  RemoveAbandoned(parent, "." + name + ".tokpack-tmp-", output);
  std::string tmpl = JoinPath(parent, "." + name + ".tokpack-tmp-XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return ErrnoToStatus(errno, "create a staging directory in", parent);
  }
  // Held for the life of the writer, so a later one can tell an abandoned
  // staging directory (a killed writer) from one in use.
  const int lock = LockIn(tmpl);
  if (lock < 0) {
    Status s = ErrnoToStatus(errno, "lock", JoinPath(tmpl, kLockFile));
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
  auto dir =
      std::unique_ptr<StagingDir>(new StagingDir(output, parent, tmpl, force, std::move(inputs)));
  dir->lock_fd_ = lock;
  return dir;
}

Status StagingDir::Link(const std::string& target, const std::string& name) {
  std::error_code ec;
  const stdfs::path to = stdfs::canonical(stdfs::absolute(target, ec), ec);
  if (ec) return ErrnoToStatus(ec.value(), "resolve", target);
  // The kernel resolves a link's ".." from where it really lies.
  const stdfs::path from =
      stdfs::weakly_canonical(stdfs::absolute(parent_, ec), ec) / stdfs::path(output_).filename();
  if (ec) return ErrnoToStatus(ec.value(), "resolve", parent_);
  const std::string relative = to.lexically_relative(from).string();
  const std::string link = JoinPath(staging_, name);
  TOKPACK_RETURN_IF_ERROR(CreateSymlink(relative, link));
  // The staging directory is the output's sibling: what the link reaches
  // from here it reaches once published.
  struct stat want, got;
  if (::stat(to.c_str(), &want) != 0) return ErrnoToStatus(errno, "stat", target);
  if (::stat(link.c_str(), &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
    return FailedPreconditionError("link '" + JoinPath(output_, name) + "' -> '" + relative +
                                   "' does not reach '" + target + "'");
  }
  return Status::Ok();
}

StagingDir::~StagingDir() {
  if (!committed_) RemoveLockLast(staging_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

StatusOr<std::string> StagingDir::ReplaceInTwoSteps() {
  // Killed between the two renames, the old dataset is left at `old` (and
  // kept by later writers, being the only copy); the output is missing.
  const std::string old = staging_ + "-old";
  if (::rename(output_.c_str(), old.c_str()) != 0) {
    return ErrnoToStatus(errno, "rename", output_ + "' to '" + old);
  }
  const int err = RenameNoReplace(staging_, output_);
  if (err != 0) {
    ::rename(old.c_str(), output_.c_str());  // Put the old one back.
    return ErrnoToStatus(err, "rename", staging_ + "' to '" + output_);
  }
  return old;
}

Status StagingDir::Commit(FileSystem* fs, const std::string& manifest_json) {
  {
    TOKPACK_ASSIGN_OR_RETURN(auto f, fs->NewWritableFile(JoinPath(staging_, Manifest::kFileName)));
    TOKPACK_RETURN_IF_ERROR(f->Append(manifest_json));
    TOKPACK_RETURN_IF_ERROR(f->Close());
  }
  TOKPACK_RETURN_IF_ERROR(fs->SyncDir(staging_));
  // What Create checked may have changed since; the renames below re-check
  // the output's existence atomically.
  TOKPACK_RETURN_IF_ERROR(CheckOutputIsNoInput(output_, inputs_));
  std::string old;  // Where a replaced dataset is now.
  int err = RenameNoReplace(staging_, output_);
  if ((err == EEXIST || err == ENOTEMPTY) && !force_) {
    return AlreadyExistsError("output '" + output_ +
                              "' appeared while this writer ran (another writer?); it was left "
                              "as it is and this one's dataset discarded; pass --force to replace "
                              "it");
  }
  int old_lock = -1;  // Held in the dataset being replaced.
  if (err == EEXIST || err == ENOTEMPTY) {
    TOKPACK_RETURN_IF_ERROR(CheckExistingOutput(output_, force_));
    // Locked before it is swapped out, so that if this process dies before
    // deleting it, the next writer knows it is abandoned.
    old_lock = LockIn(output_);
    if (old_lock < 0) return ErrnoToStatus(errno, "lock", JoinPath(output_, kLockFile));
    StatusOr<DatasetDirLock> list_lock = CarryRemovals(fs, manifest_json);
    if (!list_lock.ok()) {
      ::unlink(JoinPath(output_, kLockFile).c_str());
      ::close(old_lock);
      return list_lock.status();
    }
    // Held through the swap: a `tokpack remove` of the old dataset waits,
    // then edits the new one.
    list_lock_.emplace(std::move(*list_lock));
    // Readers see the old dataset or the new one, never neither.
    err = ::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, output_.c_str(), RENAME_EXCHANGE) == 0
              ? 0
              : errno;
    StatusOr<std::string> moved = staging_;
    if (err == EINVAL || err == ENOSYS) {
      moved = ReplaceInTwoSteps();
    } else if (err != 0) {
      moved = ErrnoToStatus(err, "rename", staging_ + "' to '" + output_);
    }
    if (!moved.ok()) {  // The old dataset is still the output.
      ::unlink(JoinPath(output_, kLockFile).c_str());
      ::close(old_lock);
      return moved.status();
    }
    old = *moved;
    err = 0;
  }
  if (err != 0) return ErrnoToStatus(err, "rename", staging_ + "' to '" + output_);
  committed_ = true;
  ::unlink(JoinPath(output_, kLockFile).c_str());  // Travelled with the directory.
  Status s = fs->SyncDir(output_);
  if (s.ok()) s = fs->SyncDir(parent_);
  // Until the renames are durable the old dataset is kept (the next writer
  // removes it).
  if (s.ok() && !old.empty()) RemoveLockLast(old);
  if (old_lock >= 0) ::close(old_lock);
  list_lock_.reset();
  return s;
}

StatusOr<DatasetDirLock> DatasetDirLock::Take(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open directory", dir);
  if (::flock(fd, LOCK_EX) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoToStatus(err, "lock", dir);
  }
  return DatasetDirLock(fd);
}

DatasetDirLock::DatasetDirLock(DatasetDirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

DatasetDirLock::~DatasetDirLock() {
  if (fd_ >= 0) ::close(fd_);  // Releases the lock.
}

StatusOr<DatasetDirLock> StagingDir::CarryRemovals(FileSystem* fs,
                                                   const std::string& manifest_json) {
  // No edit of the old list is made between reading it and the swap.
  TOKPACK_ASSIGN_OR_RETURN(DatasetDirLock lock, DatasetDirLock::Take(output_));
  StatusOr<std::string> old =
      ReadDatasetFile(output_, kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
  if (!old.ok()) return lock;  // None (or unreadable, which readers refused): nothing to keep.
  TOKPACK_ASSIGN_OR_RETURN(const Manifest m,
                           Manifest::Parse(manifest_json, JoinPath(staging_, Manifest::kFileName)));
  StatusOr<std::string> own =
      ReadDatasetFile(staging_, kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
  if (!own.ok() && own.status().code() != StatusCode::kNotFound) return own.status();
  const std::string mine = own.ok() ? *own : std::string();
  TOKPACK_ASSIGN_OR_RETURN(
      const std::string list,
      CarriedRemovedList(mine, old, m.Fingerprint(), JoinPath(output_, kRemovedFileName)));
  if (list != mine) {
    TOKPACK_RETURN_IF_ERROR(WriteFileAtomically(fs, staging_, kRemovedFileName, list));
    TOKPACK_RETURN_IF_ERROR(fs->SyncDir(staging_));
  }
  return lock;
}

}  // namespace tokpack
