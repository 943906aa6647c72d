#include "base/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <vector>

namespace tokpack {
namespace {

constexpr size_t kWriteBufferBytes = 1 << 20;

Status WriteAll(int fd, const char* p, size_t n, const std::string& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, "write", path);
    }
    if (w == 0) return IoError("cannot write '" + path + "': no progress");
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {
    buf_.reserve(kWriteBufferBytes);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (buf_.size() + data.size() > kWriteBufferBytes) {
      TOKPACK_RETURN_IF_ERROR(Flush());
      if (data.size() >= kWriteBufferBytes) {
        return WriteAll(fd_, data.data(), data.size(), path_);
      }
    }
    buf_.append(data);
    return Status::Ok();
  }

  Status Close() override {
    Status s = Flush();
    if (s.ok() && ::fsync(fd_) != 0) s = ErrnoToStatus(errno, "fsync", path_);
    if (::close(fd_) != 0 && s.ok()) s = ErrnoToStatus(errno, "close", path_);
    fd_ = -1;
    return s;
  }

  const std::string& path() const override { return path_; }

 private:
  Status Flush() {
    Status s = WriteAll(fd_, buf_.data(), buf_.size(), path_);
    buf_.clear();
    return s;
  }

  int fd_;
  std::string path_;
  std::string buf_;
};

class PosixFs : public FileSystem {
 public:
  StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoToStatus(errno, "create", path);
    return std::unique_ptr<WritableFile>(new PosixWritableFile(fd, path));
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoToStatus(errno, "rename", from + "' to '" + to);
    }
    return Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoToStatus(errno, "open directory", dir);
    Status s;
    if (::fsync(fd) != 0) s = ErrnoToStatus(errno, "fsync directory", dir);
    ::close(fd);
    return s;
  }
};

}  // namespace

FileSystem* PosixFileSystem() {
  static PosixFs* fs = new PosixFs();
  return fs;
}

StatusOr<std::string> ReadFileToString(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t r = ::read(fd, buf, sizeof(buf));
    if (r < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoToStatus(errno, "read", path);
      ::close(fd);
      return s;
    }
    if (r == 0) break;
    out.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  return out;
}

Status ReadFileBlocks(const std::string& path, size_t block_bytes,
                      const std::function<Status(std::string_view)>& visit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  std::vector<char> buf(block_bytes);
  Status s;
  while (s.ok()) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      s = ErrnoToStatus(errno, "read", path);
    } else if (r == 0) {
      break;
    } else {
      s = visit(std::string_view(buf.data(), static_cast<size_t>(r)));
    }
  }
  ::close(fd);
  return s;
}

StatusOr<uint64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return InvalidArgumentError("'" + path + "' is not a regular file");
  return static_cast<uint64_t>(st.st_size);
}

namespace {

// What a non-regular file is, for messages.
const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// `what`: the kind of file, for the message ("a tokenizer file").
Status NotRegular(const std::string& path, mode_t mode, std::string_view what) {
  return InvalidArgumentError("'" + path + "' is " + KindOf(mode) + ", not a regular file (" +
                              std::string(what) + " must be one)");
}

constexpr std::string_view kDatasetFile = "a file of a dataset";

// openat() of one component; an error names `path` and, under Links::kRefuse,
// says when the component was a symbolic link.
StatusOr<int> OpenComponent(int dir_fd, const std::string& component, int flags, Links links,
                            const std::string& path, std::string_view what = kDatasetFile) {
  if (links == Links::kRefuse) flags |= O_NOFOLLOW;
  // Look before opening: opening a device or a FIFO can block or act.
  struct stat st;
  const int at = links == Links::kRefuse ? AT_SYMLINK_NOFOLLOW : 0;
  if (::fstatat(dir_fd, component.c_str(), &st, at) != 0) {
    return ErrnoToStatus(errno, "open", path);
  }
  if (S_ISLNK(st.st_mode)) {
    return InvalidArgumentError("'" + path + "' is a symbolic link (at '" + component +
                                "'), and this file of a dataset is read only as a plain file");
  }
  if ((flags & O_DIRECTORY) ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return NotRegular(path, st.st_mode, what);
  }
  int fd;
  do {
    fd = ::openat(dir_fd, component.c_str(), flags | O_RDONLY | O_CLOEXEC | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  return fd;
}

// The size of the regular file open at `fd`, from the descriptor: the entry
// may have changed since it was looked at. Closes `fd` on an error.
StatusOr<uint64_t> RegularFileSize(int fd, const std::string& path, std::string_view what) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = ErrnoToStatus(errno, "stat", path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return NotRegular(path, st.st_mode, what);
  }
  return static_cast<uint64_t>(st.st_size);
}

// Exactly `n` bytes at `offset` of `fd` into `out` (DataLoss, naming `path`
// and its `size` at open, if the file ends first).
Status PreadExactly(int fd, uint64_t offset, size_t n, char* out, const std::string& path,
                    uint64_t size) {
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoToStatus(errno, "read", path);
    if (r == 0) {
      return DataLossError("'" + path + "' ends at byte " + std::to_string(offset + done) +
                           " while being read (it had " + std::to_string(size) + " bytes)");
    }
    done += static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status OverCap(const std::string& path, uint64_t size, uint64_t max_bytes, std::string_view what) {
  return InvalidArgumentError("'" + path + "' is " + std::to_string(size) +
                              " bytes, more than the " + std::to_string(max_bytes) +
                              "-byte cap for " + std::string(what));
}

}  // namespace

StatusOr<std::string> ReadSmallFile(const std::string& path, uint64_t max_bytes,
                                    std::string_view what) {
  // The path as given, links followed: a user may keep a tokenizer or a
  // cursor anywhere. Looked at before it is opened (opening a device can
  // act), opened O_NONBLOCK (a FIFO that slipped in between opens without
  // waiting for a writer), then judged by the descriptor.
  TOKPACK_ASSIGN_OR_RETURN(const int fd,
                           OpenComponent(AT_FDCWD, path, O_NONBLOCK, Links::kFollow, path, what));
  TOKPACK_ASSIGN_OR_RETURN(const uint64_t size, RegularFileSize(fd, path, what));
  if (size > max_bytes) {
    ::close(fd);
    return OverCap(path, size, max_bytes, what);
  }
  std::string out(static_cast<size_t>(size), '\0');
  Status s = PreadExactly(fd, 0, out.size(), out.data(), path, size);
  if (s.ok()) {
    // One byte past the size: a file still being written would otherwise be
    // taken as a whole file, cut wherever the read happened to stop.
    char more;
    ssize_t r;
    do {
      r = ::pread(fd, &more, 1, static_cast<off_t>(size));
    } while (r < 0 && errno == EINTR);
    if (r < 0) s = ErrnoToStatus(errno, "read", path);
    if (r > 0) {
      s = DataLossError("'" + path + "' grew while being read (it had " + std::to_string(size) +
                        " bytes); " + std::string(what) + " is read whole, once");
    }
  }
  ::close(fd);
  if (!s.ok()) return s;
  return out;
}

StatusOr<ReadOnlyFile> ReadOnlyFile::Open(const std::string& dir, const std::string& name,
                                          Links links) {
  const std::string path = JoinPath(dir, name);
  // The dataset directory itself is the caller's to choose: followed.
  int dir_fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return ErrnoToStatus(errno, "open directory", dir);
  size_t begin = 0;
  for (size_t slash; (slash = name.find('/', begin)) != std::string::npos; begin = slash + 1) {
    StatusOr<int> sub =
        OpenComponent(dir_fd, name.substr(begin, slash - begin), O_DIRECTORY, links, path);
    ::close(dir_fd);
    if (!sub.ok()) return sub.status();
    dir_fd = *sub;
  }
  StatusOr<int> fd = OpenComponent(dir_fd, name.substr(begin), O_NONBLOCK, links, path);
  ::close(dir_fd);
  if (!fd.ok()) return fd.status();
  TOKPACK_ASSIGN_OR_RETURN(const uint64_t size, RegularFileSize(*fd, path, kDatasetFile));
  return ReadOnlyFile(*fd, size, path);
}

ReadOnlyFile::ReadOnlyFile(ReadOnlyFile&& other) noexcept
    : fd_(other.fd_), size_(other.size_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

ReadOnlyFile& ReadOnlyFile::operator=(ReadOnlyFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

StatusOr<std::string> ReadOnlyFile::ReadAll(uint64_t max_bytes) const {
  if (size_ > max_bytes) return OverCap(path_, size_, max_bytes, "this file");
  std::string out;
  TOKPACK_RETURN_IF_ERROR(ReadAt(0, static_cast<size_t>(size_), &out));
  return out;
}

Status ReadOnlyFile::ReadAt(uint64_t offset, size_t n, std::string* out) const {
  out->resize(n);
  return PreadExactly(fd_, offset, n, out->data(), path_, size_);
}

Status ReadOnlyFile::ReadBlocks(size_t block_bytes,
                                const std::function<Status(std::string_view)>& visit) const {
  std::string block;
  for (uint64_t offset = 0; offset < size_; offset += block.size()) {
    TOKPACK_RETURN_IF_ERROR(ReadAt(
        offset, static_cast<size_t>(std::min<uint64_t>(block_bytes, size_ - offset)), &block));
    TOKPACK_RETURN_IF_ERROR(visit(block));
  }
  return Status::Ok();
}

StatusOr<std::string> ReadDatasetFile(const std::string& dir, const std::string& name,
                                      uint64_t max_bytes, Links links) {
  TOKPACK_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(dir, name, links));
  return file.ReadAll(max_bytes);
}

Status WriteFileAtomically(FileSystem* fs, const std::string& dir, const std::string& name,
                           std::string_view data) {
  // A name of this writer's own: two writers of one file (processes on
  // nodes sharing the directory, where a lock may not reach across nodes)
  // never write into each other's temporary file; the last rename wins.
  static std::atomic<uint64_t> writes{0};
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  const std::string tmp = JoinPath(dir, name + ".tmp." + host + "." + std::to_string(::getpid()) +
                                            "." + std::to_string(writes++));
  TOKPACK_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(tmp));
  Status s = file->Append(data);
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs->Rename(tmp, JoinPath(dir, name));
  if (s.ok()) s = fs->SyncDir(dir);
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status CopyFile(FileSystem* fs, const std::string& from, const std::string& to, uint64_t max_bytes,
                std::string_view what) {
  TOKPACK_ASSIGN_OR_RETURN(std::string data, ReadSmallFile(from, max_bytes, what));
  TOKPACK_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(to));
  TOKPACK_RETURN_IF_ERROR(file->Append(data));
  return file->Close();
}

Status CreateDirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoToStatus(ec.value(), "create directory", dir);
  return Status::Ok();
}

Status CreateSymlink(const std::string& target, const std::string& link) {
  if (::symlink(target.c_str(), link.c_str()) != 0) {
    return ErrnoToStatus(errno, "create symbolic link", link + "' to '" + target);
  }
  return Status::Ok();
}

void RemoveAllQuietly(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  std::string out(a);
  if (out.back() != '/') out += '/';
  out += b;
  return out;
}

}  // namespace tokpack
