// StagingDir: writes a dataset under a hidden temporary sibling of its final
// path and publishes it in one step, so that a failed or killed writer never
// leaves a directory that looks complete. Publishing renames the directory
// into place and only then renames manifest.json into it: until that last
// rename there is no manifest.json anywhere. Not thread-safe.
#ifndef TOKPACK_SRC_IO_STAGING_DIR_H_
#define TOKPACK_SRC_IO_STAGING_DIR_H_

#include <memory>
#include <string>

#include "io/file_system.h"
#include "tokpack/status.h"

namespace tokpack {

class StagingDir {
 public:
  // Checks `output` (refused if it exists, unless `force` and it is an empty
  // directory or a tokpack dataset), creates its parent directories and a
  // staging directory ".<name>.tokpack-tmp-XXXXXX" beside it, locked while
  // this object lives. Staging directories of earlier writers of the same
  // output that died (their lock is free) are removed first.
  static StatusOr<std::unique_ptr<StagingDir>> Create(const std::string& output, bool force);

  // Removes the staging directory unless Commit() succeeded.
  ~StagingDir();

  const std::string& path() const { return staging_; }
  const std::string& output() const { return output_; }

  // Writes `manifest_json`, moves the staging directory to the output (an
  // existing dataset there is replaced) and publishes manifest.json last.
  Status Commit(FileSystem* fs, const std::string& manifest_json);

 private:
  StagingDir(std::string output, std::string parent, std::string staging)
      : output_(std::move(output)), parent_(std::move(parent)), staging_(std::move(staging)) {}

  std::string output_;
  std::string parent_;
  std::string staging_;
  bool committed_ = false;
  int lock_fd_ = -1;  // flock'ed lock file inside the staging directory.
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_IO_STAGING_DIR_H_
