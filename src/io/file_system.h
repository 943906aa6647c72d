// FileSystem: the narrow interface through which the packer and the dataset
// tools write. Production code uses PosixFileSystem(); tests substitute an
// implementation that injects faults (short writes, ENOSPC, failed renames).
// Implementations must be safe to call from several threads.
#ifndef TOKPACK_SRC_IO_FILE_SYSTEM_H_
#define TOKPACK_SRC_IO_FILE_SYSTEM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tokpack/status.h"

namespace tokpack {

// An append-only file. Not thread-safe; one writer at a time.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends `data`; errors name the file and the cause (e.g. disk full).
  virtual Status Append(std::string_view data) = 0;
  // Flushes buffers, fsyncs and closes. Must be called once before use of the
  // file's contents; the destructor closes without syncing on error paths.
  virtual Status Close() = 0;
  virtual const std::string& path() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates (truncating) a file for writing.
  virtual StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // rename(2): atomic replacement within one file system.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  // fsync(2) on a directory, so renames inside it are durable.
  virtual Status SyncDir(const std::string& dir) = 0;
};

// The process-wide POSIX implementation (never null, never freed).
FileSystem* PosixFileSystem();

// Whole-file read. NotFound, IoError (naming the path) otherwise.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Streams a file through `visit` in blocks of at most `block_bytes`; stops at
// the first non-OK status `visit` returns. Errors name the path.
Status ReadFileBlocks(const std::string& path, size_t block_bytes,
                      const std::function<Status(std::string_view)>& visit);

// Size of a regular file; NotFound if missing, InvalidArgument if not a file.
StatusOr<uint64_t> FileSize(const std::string& path);

// Writes `data` to <dir>/<name> via <name>.tmp, fsync and rename.
Status WriteFileAtomically(FileSystem* fs, const std::string& dir, const std::string& name,
                           std::string_view data);

// Copies a file through `fs` (used for the tokenizer model).
Status CopyFile(FileSystem* fs, const std::string& from, const std::string& to);

// mkdir -p.
Status CreateDirs(const std::string& dir);

// rm -rf, best effort; errors are ignored because callers are cleaning up.
void RemoveAllQuietly(const std::string& path);

// `target` relative to directory `base`, both made absolute and normalized
// lexically first (symlinks are not resolved).
std::string RelativePath(const std::string& target, const std::string& base);

// "a/b" joined with "c" -> "a/b/c".
std::string JoinPath(std::string_view a, std::string_view b);

}  // namespace tokpack

#endif  // TOKPACK_SRC_IO_FILE_SYSTEM_H_
