// FileSystem: the narrow interface through which the packer and the dataset
// tools write. Production code uses PosixFileSystem(); tests substitute an
// implementation that injects faults (short writes, ENOSPC, failed renames).
// Implementations must be safe to call from several threads.
#ifndef TOKPACK_SRC_BASE_FILE_SYSTEM_H_
#define TOKPACK_SRC_BASE_FILE_SYSTEM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "tokpack/files.h"  // ReadSmallFile, the caps on whole-file reads.
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

// Whole-file read, uncapped: NotFound, IoError (naming the path) otherwise.
// For files tokpack wrote itself (a packing plan in its cache) and the .idx
// of a bare Megatron prefix (data, which may be many GB). A file read as
// configuration is read with ReadSmallFile (tokpack/files.h: a regular file,
// a cap), and one a manifest names is opened by ReadOnlyFile.
StatusOr<std::string> ReadFileToString(const std::string& path);

// Streams a file through `visit` in blocks of at most `block_bytes`; stops at
// the first non-OK status `visit` returns. Errors name the path.
Status ReadFileBlocks(const std::string& path, size_t block_bytes,
                      const std::function<Status(std::string_view)>& visit);

// Size of a regular file; NotFound if missing, InvalidArgument if not a file.
StatusOr<uint64_t> FileSize(const std::string& path);

// How ReadOnlyFile::Open treats a symbolic link met on the way to a file.
enum class Links {
  // Followed. A local merge or import links its shards to the data it does
  // not copy, so shard files are opened this way.
  kFollow,
  // Refused on every component below the dataset directory. Members that
  // tokpack always writes as plain files (the tokenizer copy, inputs.jsonl)
  // and every file `push` uploads are opened this way, so that a link planted
  // in a dataset cannot make merge or push copy a file from elsewhere.
  kRefuse,
};

// One regular file of a dataset, open for reading: the one way tokpack opens
// a file that a manifest names.
//
// Rule: <dir>/<name>, where `name` has passed CheckDatasetPath
// (src/format/dataset_path.h), so it is lexically beneath `dir`; symbolic
// links as `links` says. Whatever is reached must be a regular file: a FIFO,
// a device, a socket or a directory is refused without blocking (it is
// looked at before it is opened, opened O_NONBLOCK, and checked again with
// fstat). Sizes come from the open descriptor and reads never go past them.
class ReadOnlyFile {
 public:
  // Errors name <dir>/<name>: NotFound, InvalidArgument for a symbolic link
  // under Links::kRefuse or for anything but a regular file.
  static StatusOr<ReadOnlyFile> Open(const std::string& dir, const std::string& name, Links links);
  ReadOnlyFile(ReadOnlyFile&& other) noexcept;
  ReadOnlyFile& operator=(ReadOnlyFile&& other) noexcept;
  ~ReadOnlyFile();

  // The size at open.
  uint64_t size() const { return size_; }
  // <dir>/<name>, for messages.
  const std::string& path() const { return path_; }
  // The whole file. Refused before anything is allocated when it is larger
  // than `max_bytes` (the error names the file and the cap).
  StatusOr<std::string> ReadAll(uint64_t max_bytes) const;
  // Exactly `n` bytes at `offset` into *out (DataLoss if the file is now
  // shorter). The caller bounds `n`.
  Status ReadAt(uint64_t offset, size_t n, std::string* out) const;
  // Streams the file's first size() bytes through `visit` in blocks of at
  // most `block_bytes`; stops at the first non-OK status `visit` returns.
  Status ReadBlocks(size_t block_bytes, const std::function<Status(std::string_view)>& visit) const;

 private:
  ReadOnlyFile(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
};

// ReadOnlyFile::Open(dir, name, links), then ReadAll(max_bytes).
StatusOr<std::string> ReadDatasetFile(const std::string& dir, const std::string& name,
                                      uint64_t max_bytes, Links links);

// Writes `data` to <dir>/<name> via a temporary file of this writer's own
// (<name>.tmp.<host>.<pid>.<n>), fsync and rename.
Status WriteFileAtomically(FileSystem* fs, const std::string& dir, const std::string& name,
                           std::string_view data);

// Copies the file `from` (read by ReadSmallFile with `max_bytes` and `what`)
// to `to` through `fs`; used for the tokenizer file.
Status CopyFile(FileSystem* fs, const std::string& from, const std::string& to, uint64_t max_bytes,
                std::string_view what);

// mkdir -p.
Status CreateDirs(const std::string& dir);

// symlink(2): a link at `link` to `target`, kept as given (a relative target
// resolves from the link's directory).
Status CreateSymlink(const std::string& target, const std::string& link);

// rm -rf, best effort; errors are ignored because callers are cleaning up.
void RemoveAllQuietly(const std::string& path);

// "a/b" joined with "c" -> "a/b/c".
std::string JoinPath(std::string_view a, std::string_view b);

}  // namespace tokpack

#endif  // TOKPACK_SRC_BASE_FILE_SYSTEM_H_
