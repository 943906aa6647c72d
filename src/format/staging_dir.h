// StagingDir: writes a dataset under a hidden temporary sibling of its final
// path and publishes it in one step, so that a failed or killed writer never
// leaves a directory that looks complete, and a reader of the output sees the
// old dataset or the new one, never a mix or nothing. manifest.json is
// written into the staging directory last; one rename then publishes the
// whole directory (RENAME_NOREPLACE for a new output, RENAME_EXCHANGE to
// replace one with --force). Not thread-safe.
//
// What a writer promises at start is checked in Create and again in Commit,
// because the file system may change in between: the output does not exist
// (unless `force`, when it is an empty directory or a tokpack dataset, not a
// symbolic link to one), and it is not, does not contain and does not lie
// inside any of the writer's inputs (replacing it would delete them).
#ifndef TOKPACK_SRC_FORMAT_STAGING_DIR_H_
#define TOKPACK_SRC_FORMAT_STAGING_DIR_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/file_system.h"
#include "tokpack/status.h"

namespace tokpack {

// InvalidArgument (naming both) when `output` is one of `inputs`, contains
// one, or lies inside one. Paths are compared resolved (symlinks followed,
// `..` removed) and, where both exist, by device and inode, so another
// spelling of the same place does not slip through. `inputs` are local
// paths (files or directories); they need not exist.
Status CheckOutputIsNoInput(const std::string& output, const std::vector<std::string>& inputs);

// An exclusive flock on a dataset directory, which `tokpack remove` holds
// while it edits the removal list, and a --force writer while it carries
// that list into the dataset replacing it (StagingDir::Commit). Released
// when destroyed.
class DatasetDirLock {
 public:
  static StatusOr<DatasetDirLock> Take(const std::string& dir);
  DatasetDirLock(DatasetDirLock&& other) noexcept;
  DatasetDirLock& operator=(DatasetDirLock&&) = delete;
  ~DatasetDirLock();

 private:
  explicit DatasetDirLock(int fd) : fd_(fd) {}
  int fd_;
};

class StagingDir {
 public:
  // Checks `output` as the header says against `inputs` (local paths the
  // writer reads), creates its parent directories and a staging directory
  // ".<name>.tokpack-tmp-XXXXXX" beside it, locked while this object lives.
  // Leftovers of earlier writers of the same output that died are removed
  // first: staging directories whose lock is free, and replaced datasets
  // that a killed --force commit did not finish deleting.
  static StatusOr<std::unique_ptr<StagingDir>> Create(const std::string& output, bool force,
                                                      std::vector<std::string> inputs);

  // Removes the staging directory unless Commit() succeeded.
  ~StagingDir();

  const std::string& path() const { return staging_; }
  const std::string& output() const { return output_; }

  // Creates `name` in the staging directory, a relative symbolic link to the
  // existing `target` (so that the tree can move whole) that reaches it from
  // the output once published, however the paths are spelled and whichever
  // of the output's parents are links. FailedPrecondition, naming both, when
  // the link does not reach the same file or directory.
  Status Link(const std::string& target, const std::string& name);

  // Writes `manifest_json` as manifest.json, re-checks the promises of
  // Create and publishes the staging directory at the output. Without
  // `force`, an output that appeared meanwhile (another writer) is left
  // untouched and AlreadyExists names it. With `force`, an existing dataset
  // there is swapped out and then deleted.
  Status Commit(FileSystem* fs, const std::string& manifest_json);

 private:
  StagingDir(std::string output, std::string parent, std::string staging, bool force,
             std::vector<std::string> inputs)
      : output_(std::move(output)),
        parent_(std::move(parent)),
        staging_(std::move(staging)),
        force_(force),
        inputs_(std::move(inputs)) {}

  // Before a dataset at the output is replaced: takes the lock `tokpack
  // remove` takes on it and carries its removal list into the staging
  // directory when the new dataset has the same fingerprint (the same
  // tokens: docs/format.md 17), so takedowns survive an identical rebuild or
  // re-merge. Returns the lock, to hold through the swap.
  StatusOr<DatasetDirLock> CarryRemovals(FileSystem* fs, const std::string& manifest_json);

  // Moves the dataset at the output aside and the staging directory in,
  // for file systems without RENAME_EXCHANGE. Returns where the old one is.
  StatusOr<std::string> ReplaceInTwoSteps();

  std::string output_;
  std::string parent_;
  std::string staging_;
  std::optional<DatasetDirLock> list_lock_;  // CarryRemovals()'s, held through the swap.
  bool force_;
  std::vector<std::string> inputs_;
  bool committed_ = false;
  int lock_fd_ = -1;  // flock'ed lock file inside the staging directory.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_STAGING_DIR_H_
