#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "format/idx_file.h"
#include "io/file_system.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {

StatusOr<DatasetInfo> InspectDataset(const std::string& dir) {
  DatasetInfo info;
  TOKPACK_ASSIGN_OR_RETURN(info.manifest, Manifest::Load(dir));
  info.length_histogram.assign(32, 0);
  bool first = true;
  for (const ShardInfo& shard : info.manifest.shards) {
    info.data_bytes += shard.bin.bytes + shard.idx.bytes;
    const std::string path = JoinPath(dir, shard.path + ".idx");
    TOKPACK_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
    TOKPACK_ASSIGN_OR_RETURN(IdxView idx, ParseIdx(bytes, path));
    for (uint64_t i = 0; i < idx.sequence_count(); ++i) {
      uint64_t len = static_cast<uint64_t>(idx.length(i));
      int bucket = len == 0 ? 0 : 63 - __builtin_clzll(len);
      ++info.length_histogram[bucket];
      info.min_length = first ? len : std::min(info.min_length, len);
      info.max_length = std::max(info.max_length, len);
      first = false;
    }
  }
  while (!info.length_histogram.empty() && info.length_histogram.back() == 0) {
    info.length_histogram.pop_back();
  }
  return info;
}

StatusOr<std::vector<int64_t>> ReadDocument(const std::string& dir, const Manifest& m,
                                            uint64_t index) {
  uint64_t first = 0;
  for (const ShardInfo& shard : m.shards) {
    if (index >= first + shard.documents) {
      first += shard.documents;
      continue;
    }
    const std::string idx_path = JoinPath(dir, shard.path + ".idx");
    const std::string bin_path = JoinPath(dir, shard.path + ".bin");
    TOKPACK_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(idx_path));
    TOKPACK_ASSIGN_OR_RETURN(IdxView idx, ParseIdx(bytes, idx_path));
    const uint64_t local = index - first;
    if (local >= idx.sequence_count()) {
      return DataLossError(idx_path + ": has fewer documents than the manifest says");
    }
    const int item = TokenDtypeSize(m.dtype);
    std::string raw(static_cast<size_t>(idx.length(local)) * item, '\0');
    int fd = ::open(bin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoToStatus(errno, "open", bin_path);
    ssize_t got = ::pread(fd, raw.data(), raw.size(), idx.pointer(local));
    int err = errno;
    ::close(fd);
    if (got < 0) return ErrnoToStatus(err, "read", bin_path);
    if (static_cast<size_t>(got) != raw.size()) {
      return DataLossError(bin_path + ": truncated (document " + std::to_string(index) +
                           " runs past the end of the file)");
    }
    std::vector<int64_t> ids(raw.size() / item);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = LoadToken(raw.data() + item * i, m.dtype);
    return ids;
  }
  return OutOfRangeError("document " + std::to_string(index) + " is past the last of " +
                         std::to_string(m.TotalDocuments()) + " documents");
}

}  // namespace tokpack
