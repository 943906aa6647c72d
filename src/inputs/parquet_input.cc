#include "inputs/parquet_input.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <utility>
#include <vector>

#include "inputs/remote_input.h"
#include "storage/object_url.h"

// Set by cmake/parquet.cmake: where else the plugin may be (absolute, or
// relative to the running executable's directory, ':'-separated), and the
// pyarrow it was built against ("26.0").
#ifndef TOKPACK_PARQUET_PLUGIN_DIR
#define TOKPACK_PARQUET_PLUGIN_DIR ""
#endif
#ifndef TOKPACK_PYARROW_VERSION
#define TOKPACK_PYARROW_VERSION "?"
#endif

namespace tokpack {
namespace {

constexpr char kPluginFile[] = "libtokpack_parquet.so";

// An address inside the object (executable or extension module) this file
// is linked into, for dladdr.
const char kAnchor = 0;

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string ExecutableDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return DirName(std::string(buf, static_cast<size_t>(n)));
}

// The directory of the object holding the core's code: site-packages/tokpack
// for the Python extension, the executable's directory for the CLI.
std::string OwnObjectDir() {
  Dl_info info;
  if (dladdr(&kAnchor, &info) != 0 && info.dli_fname != nullptr &&
      std::string_view(info.dli_fname).find('/') != std::string_view::npos) {
    // The main program's name is argv[0], which may be relative.
    char resolved[PATH_MAX];
    if (realpath(info.dli_fname, resolved) != nullptr) return DirName(resolved);
  }
  return ExecutableDir();
}

// Where to look for the plugin, in order.
std::vector<std::string> PluginCandidates() {
  std::vector<std::string> dirs = {OwnObjectDir()};
  const std::string configured = TOKPACK_PARQUET_PLUGIN_DIR;
  size_t start = 0;
  while (start < configured.size()) {
    size_t end = std::min(configured.find(':', start), configured.size());
    std::string dir = configured.substr(start, end - start);
    if (!dir.empty()) dirs.push_back(dir[0] == '/' ? dir : ExecutableDir() + "/" + dir);
    start = end + 1;
  }
  std::vector<std::string> paths;
  for (const std::string& dir : dirs) {
    if (dir.empty()) continue;
    std::string path = dir + "/" + kPluginFile;
    if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
  }
  return paths;
}

using OpenFn = parquet_plugin::TextReader* (*)(parquet_plugin::Input*, const char*, uint64_t, bool,
                                               std::string*);

struct Plugin {
  Status status;  // Of loading; open is null unless OK.
  OpenFn open = nullptr;
};

Plugin LoadPlugin() {
  const std::string how_to =
      "reading Parquet needs pyarrow " TOKPACK_PYARROW_VERSION
      " (the version tokpack was built against): pip install 'pyarrow==" TOKPACK_PYARROW_VERSION
      ".*'";
  Plugin plugin;
  std::string looked;
  for (const std::string& path : PluginCandidates()) {
    if (access(path.c_str(), F_OK) != 0) {
      looked += looked.empty() ? path : ", " + path;
      continue;
    }
    // RTLD_LOCAL: Arrow's symbols stay out of the global namespace, where
    // they could clash with another copy a host process has loaded.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      plugin.status =
          FailedPreconditionError(how_to + " (dlopen error: " + (why ? why : "unknown") + ")");
      return plugin;
    }
    // Never dlclosed: Arrow keeps process-wide state (allocators, threads).
    auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "tokpack_parquet_abi"));
    auto open = reinterpret_cast<OpenFn>(dlsym(handle, "tokpack_parquet_open"));
    if (abi == nullptr || open == nullptr || abi() != parquet_plugin::kParquetPluginAbi) {
      plugin.status = FailedPreconditionError(
          path + " is not the Parquet plugin of this tokpack (interface version " +
          std::to_string(abi ? abi() : -1) + ", need " +
          std::to_string(parquet_plugin::kParquetPluginAbi) + "); reinstall tokpack");
      return plugin;
    }
    plugin.open = open;
    return plugin;
  }
  plugin.status = FailedPreconditionError(
      "reading Parquet needs tokpack's Parquet plugin, " + std::string(kPluginFile) +
      ", which is not installed (looked for " + looked +
      "); reinstall tokpack, with pyarrow " TOKPACK_PYARROW_VERSION " installed");
  return plugin;
}

const Plugin& GetPlugin() {
  static const Plugin plugin = LoadPlugin();  // Once, thread-safe.
  return plugin;
}

// A local file read with pread, for the plugin.
class LocalInput final : public parquet_plugin::Input {
 public:
  LocalInput(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~LocalInput() override { close(fd_); }
  LocalInput(const LocalInput&) = delete;
  LocalInput& operator=(const LocalInput&) = delete;

  const std::string& Name() const override { return path_; }
  uint64_t Size() const override { return size_; }
  bool ReadAt(uint64_t offset, uint64_t n, char* dst, std::string* error) override {
    while (n > 0) {
      // pread's count is capped (2 GiB on Linux); loop over short reads.
      const size_t want = static_cast<size_t>(std::min<uint64_t>(n, 1u << 30));
      const ssize_t got = pread(fd_, dst, want, static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        *error = ErrnoToStatus(errno, "read", path_).message();
        return false;
      }
      if (got == 0) {
        *error = "cannot read '" + path_ + "': it ended at byte " + std::to_string(offset) +
                 ", before its " + std::to_string(size_) + " bytes (changed while read?)";
        return false;
      }
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  const std::string path_;
  const int fd_;
  const uint64_t size_;
};

StatusOr<std::unique_ptr<parquet_plugin::Input>> OpenLocalInput(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, "open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoToStatus(err, "stat", path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgumentError("'" + path + "' is not a regular file");
  }
  return std::unique_ptr<parquet_plugin::Input>(
      std::make_unique<LocalInput>(path, fd, static_cast<uint64_t>(st.st_size)));
}

}  // namespace

Status ParquetTextReader::Select(int begin, int end) {
  std::string error;
  if (!impl_->Select(begin, end, &error)) return InvalidArgumentError(error);
  return Status::Ok();
}

StatusOr<bool> ParquetTextReader::Next(std::string_view* text, uint64_t* row, std::string* bad) {
  const char* data = nullptr;
  size_t size = 0;
  std::string error;
  const int rc = impl_->Next(&data, &size, row, bad, &error);
  if (rc < 0) return DataLossError(error.empty() ? name_ + ": cannot read Parquet" : error);
  if (rc == 0) return false;
  *text = bad->empty() ? std::string_view(data, size) : std::string_view();
  return true;
}

StatusOr<std::unique_ptr<ParquetTextReader>> OpenParquetInput(const std::string& path,
                                                              const std::string& text_key,
                                                              const StorageOptions& storage,
                                                              uint64_t max_document_bytes,
                                                              bool integers) {
  // The plugin first: without pyarrow, that is what the user must fix.
  const Plugin& plugin = GetPlugin();
  TOKPACK_RETURN_IF_ERROR(plugin.status);
  std::unique_ptr<parquet_plugin::Input> input;
  if (IsRemoteUrl(path)) {
    TOKPACK_ASSIGN_OR_RETURN(input, OpenRemoteRandomAccess(path, storage));
  } else {
    TOKPACK_ASSIGN_OR_RETURN(input, OpenLocalInput(path));
  }
  std::string error;
  parquet_plugin::TextReader* reader =
      plugin.open(input.release(), text_key.c_str(), max_document_bytes, integers, &error);
  if (reader == nullptr) {
    return InvalidArgumentError(error.empty() ? path + ": cannot open Parquet" : error);
  }
  return std::make_unique<ParquetTextReader>(std::unique_ptr<parquet_plugin::TextReader>(reader),
                                             path);
}

}  // namespace tokpack
