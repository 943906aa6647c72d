#include "format/shard_writer.h"

#include <cstdio>
#include <limits>

#include "format/idx_file.h"

namespace tokpack {

ShardWriter::ShardWriter(FileSystem* fs, std::string dir, TokenDtype dtype, uint64_t chunk_bytes,
                         uint64_t shard_tokens)
    : fs_(fs),
      dir_(std::move(dir)),
      dtype_(dtype),
      chunk_bytes_(chunk_bytes),
      shard_tokens_(shard_tokens) {}

ShardWriter::~ShardWriter() = default;

std::string ShardWriter::ShardName(size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "shard-%05zu", index);
  return buf;
}

Status ShardWriter::OpenShard() {
  const std::string path = JoinPath(dir_, ShardName(done_.size()) + ".bin");
  TOKPACK_ASSIGN_OR_RETURN(bin_, fs_->NewWritableFile(path));
  bin_hash_ = std::make_unique<ChunkHasher>(chunk_bytes_);
  lengths_.clear();
  shard_token_count_ = 0;
  return Status::Ok();
}

Status ShardWriter::CloseShard() {
  TOKPACK_RETURN_IF_ERROR(bin_->Close());
  bin_.reset();
  ShardInfo info;
  info.path = ShardName(done_.size());
  info.tokens = shard_token_count_;
  info.documents = lengths_.size();
  info.bin = bin_hash_->Finish();

  const std::string idx = EncodeIdx(dtype_, lengths_);
  TOKPACK_ASSIGN_OR_RETURN(auto idx_file, fs_->NewWritableFile(JoinPath(dir_, info.path + ".idx")));
  TOKPACK_RETURN_IF_ERROR(idx_file->Append(idx));
  TOKPACK_RETURN_IF_ERROR(idx_file->Close());
  ChunkHasher idx_hash(chunk_bytes_);
  idx_hash.Update(idx);
  info.idx = idx_hash.Finish();
  done_.push_back(std::move(info));
  return Status::Ok();
}

Status ShardWriter::AddDocument(std::string_view tokens, uint64_t num_tokens) {
  if (num_tokens > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("a document of " + std::to_string(num_tokens) +
                                " tokens exceeds the index's int32 length limit");
  }
  if (bin_ && shard_token_count_ > 0 && shard_token_count_ + num_tokens > shard_tokens_) {
    TOKPACK_RETURN_IF_ERROR(CloseShard());
  }
  if (!bin_) TOKPACK_RETURN_IF_ERROR(OpenShard());
  TOKPACK_RETURN_IF_ERROR(bin_->Append(tokens));
  bin_hash_->Update(tokens);
  lengths_.push_back(static_cast<int32_t>(num_tokens));
  shard_token_count_ += num_tokens;
  return Status::Ok();
}

StatusOr<std::vector<ShardInfo>> ShardWriter::Finish() {
  if (bin_) TOKPACK_RETURN_IF_ERROR(CloseShard());
  return std::move(done_);
}

}  // namespace tokpack
