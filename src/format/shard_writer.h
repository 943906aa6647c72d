// ShardWriter: appends documents to shard-NNNNN.bin/.idx pairs in a directory,
// starting a new shard when the next document would exceed the token budget,
// and computes the manifest digests as it writes. Not thread-safe: the packer
// has exactly one ordered writer.
#ifndef TOKPACK_SRC_FORMAT_SHARD_WRITER_H_
#define TOKPACK_SRC_FORMAT_SHARD_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "tokpack/manifest.h"

namespace tokpack {

class ShardWriter {
 public:
  // `fs` must outlive the writer. `shard_tokens` > 0.
  ShardWriter(FileSystem* fs, std::string dir, TokenDtype dtype, uint64_t chunk_bytes,
              uint64_t shard_tokens);
  ~ShardWriter();

  // Appends one document of `num_tokens` tokens, `tokens` holding them in the
  // shard dtype, little endian. A document is never split across shards.
  Status AddDocument(std::string_view tokens, uint64_t num_tokens);

  // Closes the open shard and returns every shard written, in order.
  StatusOr<std::vector<ShardInfo>> Finish();

  // "shard-00042".
  static std::string ShardName(size_t index);

 private:
  Status OpenShard();
  Status CloseShard();

  FileSystem* fs_;
  std::string dir_;
  TokenDtype dtype_;
  uint64_t chunk_bytes_;
  uint64_t shard_tokens_;
  std::unique_ptr<WritableFile> bin_;
  std::unique_ptr<ChunkHasher> bin_hash_;
  std::vector<int32_t> lengths_;
  uint64_t shard_token_count_ = 0;
  std::vector<ShardInfo> done_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_SHARD_WRITER_H_
