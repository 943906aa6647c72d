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

}  // namespace tokpack
