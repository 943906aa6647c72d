#include "common/chunk_hasher.h"
#include "format/idx_file.h"
#include "io/file_system.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

constexpr size_t kBlockBytes = 1 << 20;

std::string ChunkRange(uint64_t k, uint64_t chunk, uint64_t size) {
  uint64_t begin = k * chunk, end = std::min(size, begin + chunk);
  return "chunk " + std::to_string(k) + " (bytes " + std::to_string(begin) + ".." +
         std::to_string(end) + ")";
}

void CompareDigest(const std::string& path, const FileDigest& want, const FileDigest& got,
                   uint64_t chunk, VerifyReport* report) {
  if (got.bytes != want.bytes) {
    report->problems.push_back(path + ": size " + std::to_string(got.bytes) +
                               " bytes, manifest says " + std::to_string(want.bytes));
    return;
  }
  for (size_t k = 0; k < want.chunk_xxh3.size(); ++k) {
    if (got.chunk_xxh3[k] != want.chunk_xxh3[k]) {
      report->problems.push_back(path + ": " + ChunkRange(k, chunk, want.bytes) + " checksum " +
                                 HashToHex(got.chunk_xxh3[k]) + ", manifest says " +
                                 HashToHex(want.chunk_xxh3[k]));
    }
  }
}

// Hashes a .bin and finds the first token id outside [0, vocab). Blocks are a
// multiple of the token size, so no token straddles two blocks.
void CheckBin(const std::string& path, const Manifest& m, const ShardInfo& shard,
              const std::function<void(uint64_t)>& on_bytes, VerifyReport* report) {
  ChunkHasher hasher(m.chunk_bytes);
  const int item = TokenDtypeSize(m.dtype);
  const int64_t vocab = m.tokenizer.vocab_size;
  uint64_t offset = 0;
  bool reported = false;
  Status s = ReadFileBlocks(path, kBlockBytes, [&](std::string_view block) {
    hasher.Update(block);
    if (vocab > 0 && !reported) {
      for (size_t i = 0; i + item <= block.size(); i += item) {
        const int64_t id = LoadToken(block.data() + i, m.dtype);
        if (id < 0 || id >= vocab) {
          report->problems.push_back(path + ": token " + std::to_string((offset + i) / item) +
                                     " is id " + std::to_string(id) +
                                     ", outside the vocabulary of " + std::to_string(vocab));
          reported = true;
          break;
        }
      }
    }
    offset += block.size();
    report->bytes_checked += block.size();
    if (on_bytes) on_bytes(block.size());
    return Status::Ok();
  });
  if (!s.ok()) {
    report->problems.push_back(s.message());
    return;
  }
  ++report->files_checked;
  CompareDigest(path, shard.bin, hasher.Finish(), m.chunk_bytes, report);
}

void CheckIdx(const std::string& path, const Manifest& m, const ShardInfo& shard, uint64_t bin_size,
              VerifyReport* report) {
  StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) {
    report->problems.push_back(bytes.status().message());
    return;
  }
  ++report->files_checked;
  report->bytes_checked += bytes->size();
  ChunkHasher hasher(m.chunk_bytes);
  hasher.Update(*bytes);
  CompareDigest(path, shard.idx, hasher.Finish(), m.chunk_bytes, report);
  StatusOr<IdxView> idx = ParseIdx(*bytes, path);
  if (!idx.ok()) {
    report->problems.push_back(idx.status().message());
    return;
  }
  if (idx->dtype() != m.dtype) {
    report->problems.push_back(path + ": dtype " + std::string(TokenDtypeName(idx->dtype())) +
                               ", manifest says " + std::string(TokenDtypeName(m.dtype)));
  }
  if (idx->sequence_count() != shard.documents || idx->tokens() != shard.tokens) {
    report->problems.push_back(path + ": " + std::to_string(idx->sequence_count()) +
                               " documents and " + std::to_string(idx->tokens()) +
                               " tokens, manifest says " + std::to_string(shard.documents) +
                               " and " + std::to_string(shard.tokens));
  }
  if (idx->bin_bytes() != bin_size) {
    report->problems.push_back(path + ": describes " + std::to_string(idx->bin_bytes()) +
                               " bytes of tokens but the .bin has " + std::to_string(bin_size));
  }
}

}  // namespace

StatusOr<VerifyReport> VerifyDataset(const std::string& dir,
                                     const std::function<void(uint64_t)>& on_bytes) {
  TOKPACK_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(dir));
  VerifyReport report;
  for (const ShardInfo& shard : m.shards) {
    const std::string bin = JoinPath(dir, shard.path + ".bin");
    const std::string idx = JoinPath(dir, shard.path + ".idx");
    StatusOr<uint64_t> bin_size = FileSize(bin);
    if (!bin_size.ok()) {
      report.problems.push_back(bin_size.status().message());
    } else {
      CheckBin(bin, m, shard, on_bytes, &report);
    }
    CheckIdx(idx, m, shard, bin_size.ok() ? *bin_size : 0, &report);
  }
  if (!m.tokenizer.file.empty()) {
    const std::string path = JoinPath(dir, m.tokenizer.file);
    StatusOr<std::string> model = ReadFileToString(path);
    if (!model.ok()) {
      report.problems.push_back(model.status().message());
    } else if (Xxh3(*model) != m.tokenizer.model_xxh3) {
      report.problems.push_back(path + ": checksum does not match the manifest's tokenizer");
    }
  }
  if (m.provenance.inputs_in_file) {
    const std::string path = JoinPath(dir, Provenance::kInputsFileName);
    StatusOr<std::string> list = ReadFileToString(path);
    Status s = list.ok() ? ReadInputList(*list, path, &m.provenance) : list.status();
    if (!s.ok()) report.problems.push_back(s.message());
  }
  return report;
}

}  // namespace tokpack
