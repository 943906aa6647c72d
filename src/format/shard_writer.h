// ShardWriter: appends documents to shard-NNNNN.bin/.idx pairs in a directory
// (and, with loss masks, shard-NNNNN.mask beside them; with document sources,
// shard-NNNNN.src), starting a new shard
// when the next document would exceed the token budget, and computes the
// manifest digests as it writes. Not thread-safe: the packer
// has exactly one ordered writer.
#ifndef TOKPACK_SRC_FORMAT_SHARD_WRITER_H_
#define TOKPACK_SRC_FORMAT_SHARD_WRITER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "format/loss_mask.h"
#include "format/source_index.h"
#include "tokpack/manifest.h"

namespace tokpack {

// Where a document came from (src/format/source_index.h).
struct DocumentOrigin {
  uint64_t input = 0;   // Index in the build's input list.
  uint64_t record = 0;  // Line, row or item number from 1; 0 for a whole file.
  std::optional<std::string_view> id;
};

class ShardWriter {
 public:
  // `fs` must outlive the writer. `shard_tokens` > 0. With `loss_masks`
  // every shard gets a .mask (src/format/loss_mask.h); with `source_inputs`
  // > 0 a .src of documents' origins in a list of that many inputs.
  ShardWriter(FileSystem* fs, std::string dir, TokenDtype dtype, uint64_t chunk_bytes,
              uint64_t shard_tokens, bool loss_masks = false, uint64_t source_inputs = 0);
  ~ShardWriter();

  // Appends one document of `num_tokens` tokens, `tokens` holding them in the
  // shard dtype, little endian. A document is never split across shards.
  // With loss masks, `loss` holds one byte per token (non-zero: the token
  // carries loss), or is empty when every token does; without, it must be
  // empty. With sources, `origin` says where the document came from.
  Status AddDocument(std::string_view tokens, uint64_t num_tokens, std::string_view loss = {},
                     const DocumentOrigin* origin = nullptr);

  // Closes the open shard and returns every shard written, in order.
  StatusOr<std::vector<ShardInfo>> Finish();

  // "shard-00042".
  static std::string ShardName(size_t index);

 private:
  Status OpenShard();
  Status CloseShard();
  Status WriteMaskBytes(const std::string& bytes);

  FileSystem* fs_;
  std::string dir_;
  TokenDtype dtype_;
  uint64_t chunk_bytes_;
  uint64_t shard_tokens_;
  std::unique_ptr<WritableFile> bin_;
  std::unique_ptr<ChunkHasher> bin_hash_;
  bool loss_masks_;
  std::unique_ptr<WritableFile> mask_;
  std::unique_ptr<ChunkHasher> mask_hash_;
  MaskPacker mask_bits_;
  uint64_t source_inputs_;
  std::unique_ptr<SourceIndexWriter> sources_;
  std::vector<int32_t> lengths_;
  uint64_t shard_token_count_ = 0;
  std::vector<ShardInfo> done_;
};

}  // namespace tokpack

#endif  // TOKPACK_SRC_FORMAT_SHARD_WRITER_H_
