#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "format/idx_file.h"
#include "format/shard_writer.h"
#include "format/staging_dir.h"
#include "tokpack/builder.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/tokenizer.h"
#include "tokpack/version.h"

namespace tokpack {

StatusOr<Manifest> ImportMegatron(const ImportOptions& o) {
  if (o.prefixes.empty()) return InvalidArgumentError("import needs at least one prefix");
  TOKPACK_RETURN_IF_ERROR(CheckChunkBytes(o.chunk_bytes).WithContext("--chunk-bytes"));
  Manifest m;
  m.chunk_bytes = o.chunk_bytes;
  m.provenance.version = Version();
  m.provenance.kind = "import";
  std::unique_ptr<Tokenizer> tokenizer;
  if (!o.tokenizer_model.empty()) {
    TOKPACK_ASSIGN_OR_RETURN(tokenizer, Tokenizer::Load(o.tokenizer_model, o.tokenizer_options));
    m.tokenizer = tokenizer->info();
  }
  std::vector<std::string> inputs;
  if (tokenizer) inputs.push_back(o.tokenizer_model);
  for (const std::string& prefix : o.prefixes) {
    inputs.push_back(StripShardExtension(prefix) + ".bin");
    inputs.push_back(StripShardExtension(prefix) + ".idx");
  }
  // Before the hashing, which takes long: the output must not replace the
  // very files it will describe.
  TOKPACK_ASSIGN_OR_RETURN(auto staging, StagingDir::Create(o.output, o.force, std::move(inputs)));
  for (size_t i = 0; i < o.prefixes.size(); ++i) {
    const std::string prefix = StripShardExtension(o.prefixes[i]);
    const std::string idx_path = prefix + ".idx", bin_path = prefix + ".bin";
    TOKPACK_ASSIGN_OR_RETURN(std::string idx_bytes, ReadFileToString(idx_path));
    TOKPACK_ASSIGN_OR_RETURN(IdxView idx, ParseIdx(idx_bytes, idx_path));
    if (i == 0) {
      m.dtype = idx.dtype();
    } else if (idx.dtype() != m.dtype) {
      return InvalidArgumentError(idx_path + ": dtype " + std::string(TokenDtypeName(idx.dtype())) +
                                  " differs from the first prefix's " +
                                  std::string(TokenDtypeName(m.dtype)));
    }
    TOKPACK_ASSIGN_OR_RETURN(uint64_t bin_size, FileSize(bin_path));
    if (bin_size != idx.bin_bytes()) {
      return DataLossError(bin_path + ": " + std::to_string(bin_size) + " bytes, but " + idx_path +
                           " describes " + std::to_string(idx.bin_bytes()));
    }
    ShardInfo shard;
    // Links in the output to the prefix's files (made below): a
    // manifest names only files beneath its directory.
    shard.path = ShardWriter::ShardName(i);
    shard.tokens = idx.tokens();
    shard.documents = idx.sequence_count();
    ChunkHasher bin_hash(o.chunk_bytes);
    TOKPACK_RETURN_IF_ERROR(ReadFileBlocks(bin_path, 1 << 20, [&](std::string_view block) {
      bin_hash.Update(block);
      return Status::Ok();
    }));
    shard.bin = bin_hash.Finish();
    if (shard.bin.bytes != bin_size) {
      return DataLossError(bin_path + ": changed size while being read");
    }
    ChunkHasher idx_hash(o.chunk_bytes);
    idx_hash.Update(idx_bytes);
    shard.idx = idx_hash.Finish();
    m.shards.push_back(std::move(shard));
    m.provenance.sources.push_back(o.prefixes[i]);
    m.provenance.counts.documents += idx.sequence_count();
    m.provenance.counts.tokens += idx.tokens();
  }
  if (tokenizer && m.dtype == TokenDtype::kUInt16 && m.tokenizer.vocab_size > 65536) {
    return InvalidArgumentError("tokenizer '" + o.tokenizer_model + "' has " +
                                std::to_string(m.tokenizer.vocab_size) +
                                " ids, too many for the uint16 tokens of these shards");
  }
  for (size_t i = 0; i < o.prefixes.size(); ++i) {
    for (const char* ext : {".bin", ".idx"}) {
      TOKPACK_RETURN_IF_ERROR(
          staging->Link(StripShardExtension(o.prefixes[i]) + ext, m.shards[i].path + ext));
    }
  }
  if (tokenizer) {
    TOKPACK_RETURN_IF_ERROR(CopyFile(PosixFileSystem(), o.tokenizer_model,
                                     JoinPath(staging->path(), m.tokenizer.file),
                                     kMaxTokenizerBytes, "a tokenizer file"));
  }
  TOKPACK_RETURN_IF_ERROR(staging->Commit(PosixFileSystem(), m.ToJson()));
  return m;
}

}  // namespace tokpack
