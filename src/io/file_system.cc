#include "io/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

Status WriteFileAtomically(FileSystem* fs, const std::string& dir, const std::string& name,
                           std::string_view data) {
  const std::string tmp = JoinPath(dir, name + ".tmp");
  TOKPACK_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(tmp));
  Status s = file->Append(data);
  if (s.ok()) s = file->Close();
  if (s.ok()) s = fs->Rename(tmp, JoinPath(dir, name));
  if (s.ok()) s = fs->SyncDir(dir);
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status CopyFile(FileSystem* fs, const std::string& from, const std::string& to) {
  TOKPACK_ASSIGN_OR_RETURN(std::string data, ReadFileToString(from));
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

void RemoveAllQuietly(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string RelativePath(const std::string& target, const std::string& base) {
  namespace fs = std::filesystem;
  fs::path t = fs::absolute(target).lexically_normal();
  fs::path b = fs::absolute(base).lexically_normal();
  return t.lexically_relative(b).string();
}

std::string JoinPath(std::string_view a, std::string_view b) {
  if (a.empty()) return std::string(b);
  std::string out(a);
  if (out.back() != '/') out += '/';
  out += b;
  return out;
}

}  // namespace tokpack
