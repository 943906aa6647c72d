#include "format/shard_writer.h"

#include <cstdio>
#include <limits>

#include "format/idx_file.h"

namespace tokpack {

ShardWriter::ShardWriter(FileSystem* fs, std::string dir, TokenDtype dtype, uint64_t chunk_bytes,
                         uint64_t shard_tokens, bool loss_masks, uint64_t source_inputs)
    : fs_(fs),
      dir_(std::move(dir)),
      dtype_(dtype),
      chunk_bytes_(chunk_bytes),
      shard_tokens_(shard_tokens),
      loss_masks_(loss_masks),
      source_inputs_(source_inputs) {}

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
  if (loss_masks_) {
    TOKPACK_ASSIGN_OR_RETURN(
        mask_, fs_->NewWritableFile(JoinPath(dir_, ShardName(done_.size()) + ".mask")));
    mask_hash_ = std::make_unique<ChunkHasher>(chunk_bytes_);
    mask_bits_ = MaskPacker();
  }
  if (source_inputs_ > 0) sources_ = std::make_unique<SourceIndexWriter>(source_inputs_);
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
  if (loss_masks_) {
    TOKPACK_RETURN_IF_ERROR(WriteMaskBytes(mask_bits_.Finish()));
    TOKPACK_RETURN_IF_ERROR(mask_->Close());
    mask_.reset();
    info.has_mask = true;
    info.mask = mask_hash_->Finish();
    info.trainable_tokens = mask_bits_.set_bits();
  }

  if (sources_) {
    TOKPACK_ASSIGN_OR_RETURN(const std::string src, sources_->Finish());
    sources_.reset();
    TOKPACK_ASSIGN_OR_RETURN(auto file, fs_->NewWritableFile(JoinPath(dir_, info.path + ".src")));
    TOKPACK_RETURN_IF_ERROR(file->Append(src));
    TOKPACK_RETURN_IF_ERROR(file->Close());
    ChunkHasher hash(chunk_bytes_);
    hash.Update(src);
    info.has_sources = true;
    info.sources = hash.Finish();
  }

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

Status ShardWriter::WriteMaskBytes(const std::string& bytes) {
  if (bytes.empty()) return Status::Ok();
  TOKPACK_RETURN_IF_ERROR(mask_->Append(bytes));
  mask_hash_->Update(bytes);
  return Status::Ok();
}

Status ShardWriter::AddDocument(std::string_view tokens, uint64_t num_tokens, std::string_view loss,
                                const DocumentOrigin* origin) {
  if (num_tokens > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgumentError("a document of " + std::to_string(num_tokens) +
                                " tokens exceeds the index's int32 length limit");
  }
  if (!loss.empty() && (!loss_masks_ || loss.size() != num_tokens)) {
    return InternalError("a document's loss flags do not match its " + std::to_string(num_tokens) +
                         " tokens or the writer has no masks");
  }
  if ((origin != nullptr) != (source_inputs_ > 0)) {
    return InternalError("a document's origin is missing, or given to a writer without sources");
  }
  if (bin_ && shard_token_count_ > 0 && shard_token_count_ + num_tokens > shard_tokens_) {
    TOKPACK_RETURN_IF_ERROR(CloseShard());
  }
  if (!bin_) TOKPACK_RETURN_IF_ERROR(OpenShard());
  TOKPACK_RETURN_IF_ERROR(bin_->Append(tokens));
  bin_hash_->Update(tokens);
  if (loss_masks_) {
    if (loss.empty()) {
      mask_bits_.AppendRun(num_tokens, true);
    } else {
      mask_bits_.Append(loss);
    }
    TOKPACK_RETURN_IF_ERROR(WriteMaskBytes(mask_bits_.TakeBytes()));
  }
  if (sources_) {
    TOKPACK_RETURN_IF_ERROR(sources_->Add(origin->input, origin->record, origin->id));
  }
  lengths_.push_back(static_cast<int32_t>(num_tokens));
  shard_token_count_ += num_tokens;
  return Status::Ok();
}

StatusOr<std::vector<ShardInfo>> ShardWriter::Finish() {
  if (bin_) TOKPACK_RETURN_IF_ERROR(CloseShard());
  return std::move(done_);
}

}  // namespace tokpack
