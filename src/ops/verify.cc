#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <system_error>

#include "base/chunk_hasher.h"
#include "base/file_system.h"
#include "format/dataset_path.h"
#include "format/idx_file.h"
#include "format/loss_mask.h"
#include "format/removed_list.h"
#include "format/source_index.h"
#include "storage/http_store.h"
#include "storage/object_url.h"
#include "storage/remote_source.h"
#include "tokpack/dataset_ops.h"

namespace tokpack {
namespace {

constexpr size_t kBlockBytes = 1 << 20;
// Remote files are read in larger ranged GETs: fewer round trips.
constexpr uint64_t kRemoteBlockBytes = uint64_t{8} << 20;

using BlockVisitor = std::function<Status(std::string_view)>;

// The files of one dataset, named relative to it: a local directory, or an
// object-store prefix read by ranged GETs (not through the chunk cache, so
// what is checked is what the store holds). Names come from the manifest
// (CheckDatasetPath-clean); local shard files may be links (a merge or an
// import made them), other members may not (ReadOnlyFile's rule).
class DatasetFiles {
 public:
  virtual ~DatasetFiles() = default;
  // How problems name file `name`.
  virtual std::string Where(const std::string& name) const = 0;
  // Size of shard file `name`.
  virtual StatusOr<uint64_t> Size(const std::string& name) const = 0;
  // The whole of `name`, refused when larger than `max_bytes`.
  virtual StatusOr<std::string> Read(const std::string& name, uint64_t max_bytes,
                                     Links links) const = 0;
  // Streams the first `size` bytes of shard file `name` through `visit` in
  // blocks whose sizes are multiples of 4 (so no token straddles two blocks).
  virtual Status ReadBlocks(const std::string& name, uint64_t size,
                            const BlockVisitor& visit) const = 0;
};

class LocalFiles : public DatasetFiles {
 public:
  explicit LocalFiles(std::string dir) : dir_(std::move(dir)) {}
  // A file reached through a link (a merge's or an import's) is named with
  // the file it reaches: that is the one to mend.
  std::string Where(const std::string& name) const override {
    const std::string path = JoinPath(dir_, name);
    std::error_code ec;
    const std::filesystem::path real = std::filesystem::canonical(path, ec);
    if (ec || real == std::filesystem::canonical(dir_, ec) / name) return path;
    return path + " -> " + real.string();
  }
  StatusOr<uint64_t> Size(const std::string& name) const override {
    TOKPACK_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(dir_, name, Links::kFollow));
    return file.size();
  }
  StatusOr<std::string> Read(const std::string& name, uint64_t max_bytes,
                             Links links) const override {
    return ReadDatasetFile(dir_, name, max_bytes, links);
  }
  Status ReadBlocks(const std::string& name, uint64_t /*size*/,
                    const BlockVisitor& visit) const override {
    TOKPACK_ASSIGN_OR_RETURN(ReadOnlyFile file, ReadOnlyFile::Open(dir_, name, Links::kFollow));
    return file.ReadBlocks(kBlockBytes, visit);
  }

 private:
  std::string dir_;
};

class RemoteFiles : public DatasetFiles {
 public:
  RemoteFiles(std::string url, ObjectLocation location, const StorageOptions& storage)
      : url_(std::move(url)), store_(std::move(location), HttpOptions::From(storage)) {}
  std::string Where(const std::string& name) const override { return url_ + "/" + name; }
  StatusOr<uint64_t> Size(const std::string& name) const override { return store_.Size(name); }
  StatusOr<std::string> Read(const std::string& name, uint64_t max_bytes,
                             Links /*links*/) const override {
    return store_.Get(name, max_bytes);
  }
  Status ReadBlocks(const std::string& name, uint64_t size,
                    const BlockVisitor& visit) const override {
    std::string block;
    for (uint64_t offset = 0; offset < size; offset += kRemoteBlockBytes) {
      TOKPACK_RETURN_IF_ERROR(
          store_.GetRange(name, offset, std::min(kRemoteBlockBytes, size - offset), &block));
      TOKPACK_RETURN_IF_ERROR(visit(block));
    }
    return Status::Ok();
  }

 private:
  std::string url_;
  HttpStore store_;
};

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

// Reads `name` (`size` bytes) block by block, hashing it and handing each
// block to `each`, then compares the hash with `digest`. False, with the
// problem reported, when the file cannot be read.
bool HashBlocks(const DatasetFiles& files, const std::string& name, uint64_t size,
                const Manifest& m, const FileDigest& digest,
                const std::function<void(std::string_view)>& each, VerifyReport* report) {
  ChunkHasher hasher(m.chunk_bytes);
  Status s = files.ReadBlocks(name, size, [&](std::string_view block) {
    hasher.Update(block);
    each(block);
    report->bytes_checked += block.size();
    return Status::Ok();
  });
  if (!s.ok()) {
    report->problems.push_back(s.message());
    return false;
  }
  ++report->files_checked;
  CompareDigest(files.Where(name), digest, hasher.Finish(), m.chunk_bytes, report);
  return true;
}

// Hashes a .bin of `size` bytes and finds the first token id outside [0,
// vocab). Blocks are a multiple of the token size, so no token straddles two.
void CheckBin(const DatasetFiles& files, const std::string& name, uint64_t size, const Manifest& m,
              const ShardInfo& shard, const std::function<void(uint64_t)>& on_bytes,
              VerifyReport* report) {
  const std::string path = files.Where(name);
  const int item = TokenDtypeSize(m.dtype);
  const int64_t vocab = m.tokenizer.vocab_size;
  uint64_t offset = 0;
  bool reported = false;
  HashBlocks(
      files, name, size, m, shard.bin,
      [&](std::string_view block) {
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
        if (on_bytes) on_bytes(block.size());
      },
      report);
}

// Whether a file's `size` (or the error getting it) is `want`; else a
// problem naming `path`, its size and `expected` (what it should be).
bool SizeIs(const StatusOr<uint64_t>& size, const std::string& path, uint64_t want,
            const std::string& expected, VerifyReport* report) {
  if (!size.ok()) {
    report->problems.push_back(size.status().message());
    return false;
  }
  if (*size != want) {
    report->problems.push_back(path + ": size " + std::to_string(*size) + " bytes, " + expected);
    return false;
  }
  return true;
}

void CheckIdx(const DatasetFiles& files, const std::string& name, const Manifest& m,
              const ShardInfo& shard, uint64_t bin_size, VerifyReport* report) {
  const std::string path = files.Where(name);
  // The size first: a remote .idx is read whole only when it is the size the
  // manifest says (the manifest's sizes were checked when it was parsed).
  StatusOr<uint64_t> size = files.Size(name);
  if (!SizeIs(size, path, shard.idx.bytes, "manifest says " + std::to_string(shard.idx.bytes),
              report)) {
    return;
  }
  // Read whole, as a reader holds a remote one: under the same cap.
  StatusOr<std::string> bytes =
      files.Read(name, std::min(shard.idx.bytes, RemoteOpener::kMaxResidentBytes), Links::kFollow);
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

// Hashes a .mask, counts its set bits against the manifest's
// trainable_tokens and checks that the last byte's unused bits are 0
// (docs/format.md 3.1), so a reader's counts of trained tokens are right.
void CheckMask(const DatasetFiles& files, const std::string& name, const Manifest& m,
               const ShardInfo& shard, VerifyReport* report) {
  const std::string path = files.Where(name);
  StatusOr<uint64_t> size = files.Size(name);
  const uint64_t want = MaskBytes(shard.tokens);
  if (!SizeIs(size, path, shard.mask.bytes == want ? want : UINT64_MAX,
              "expected " + std::to_string(want) + " (one bit per token of " +
                  std::to_string(shard.tokens) + ")",
              report)) {
    return;
  }
  uint64_t set = 0;
  uint8_t last = 0;
  const auto count = [&](std::string_view block) {
    for (char c : block) set += static_cast<uint64_t>(__builtin_popcount(static_cast<uint8_t>(c)));
    if (!block.empty()) last = static_cast<uint8_t>(block.back());
  };
  if (!HashBlocks(files, name, *size, m, shard.mask, count, report)) return;
  const unsigned used = static_cast<unsigned>(shard.tokens % 8);
  if (used != 0 && (last >> used) != 0) {
    report->problems.push_back(path + ": the last byte's " + std::to_string(8 - used) +
                               " unused bits are not 0");
    set -= static_cast<uint64_t>(__builtin_popcount(last >> used));
  }
  if (set != shard.trainable_tokens) {
    report->problems.push_back(path + ": " + std::to_string(set) +
                               " tokens carry loss, manifest says " +
                               std::to_string(shard.trainable_tokens));
  }
}

// Hashes a .src against its digest and checks all of it (docs/format.md
// 3.2): a lookup then never meets a fault verify did not report.
void CheckSources(const DatasetFiles& files, const std::string& name, const Manifest& m,
                  const ShardInfo& shard, VerifyReport* report) {
  const std::string path = files.Where(name);
  StatusOr<uint64_t> size = files.Size(name);
  if (!SizeIs(size, path, shard.sources.bytes,
              "manifest says " + std::to_string(shard.sources.bytes), report)) {
    return;
  }
  std::string bytes;
  const auto keep = [&](std::string_view block) { bytes.append(block); };
  if (!HashBlocks(files, name, *size, m, shard.sources, keep, report)) return;
  Status s = CheckSourceFile(bytes, shard.documents, path);
  if (s.ok()) {
    StatusOr<SourceHeader> h = ParseSourceHeader(bytes, bytes.size(), shard.documents, path);
    if (h->inputs > m.provenance.InputTotal() ||
        shard.sources_input_offset > m.provenance.InputTotal() - h->inputs) {
      s = DataLossError(path + ": its inputs pass the manifest's " +
                        std::to_string(m.provenance.InputTotal()));
    }
  }
  if (!s.ok()) report->problems.push_back(s.message());
}

// Checks the removal list beside the manifest, when there is one
// (docs/format.md 17): its format, that it was made for this version of the
// dataset, and its indices.
void CheckRemovedList(const DatasetFiles& files, const Manifest& m, VerifyReport* report) {
  StatusOr<std::string> text = files.Read(kRemovedFileName, kMaxRemovedListBytes, Links::kRefuse);
  if (!text.ok() && text.status().code() == StatusCode::kNotFound) return;
  Status s = text.status();
  if (s.ok()) {
    ++report->files_checked;
    report->bytes_checked += text->size();
    s = ParseRemovedListFor(*text, files.Where(kRemovedFileName), m.Fingerprint(),
                            m.TotalDocuments())
            .status();
  }
  if (!s.ok()) report->problems.push_back(s.message());
}

VerifyReport VerifyWithManifest(const DatasetFiles& files, Manifest m,
                                const std::function<void(uint64_t)>& on_bytes) {
  VerifyReport report;
  for (const ShardInfo& shard : m.shards) {
    const std::string bin = shard.path + ".bin";
    StatusOr<uint64_t> bin_size = files.Size(bin);
    if (!bin_size.ok()) {
      report.problems.push_back(bin_size.status().message());
    } else {
      CheckBin(files, bin, *bin_size, m, shard, on_bytes, &report);
    }
    CheckIdx(files, shard.path + ".idx", m, shard, bin_size.ok() ? *bin_size : 0, &report);
    if (shard.has_mask) CheckMask(files, shard.path + ".mask", m, shard, &report);
    if (shard.has_sources) CheckSources(files, shard.path + ".src", m, shard, &report);
  }
  if (!m.tokenizer.file.empty()) {
    StatusOr<std::string> model = files.Read(m.tokenizer.file, kMaxTokenizerBytes, Links::kRefuse);
    if (!model.ok()) {
      report.problems.push_back(model.status().message());
    } else if (Xxh3(*model) != m.tokenizer.model_xxh3) {
      report.problems.push_back(files.Where(m.tokenizer.file) +
                                ": checksum does not match the manifest's tokenizer");
    }
  }
  if (!m.provenance.inputs_file.empty()) {
    const std::string name = m.provenance.inputs_file;
    StatusOr<std::string> list = files.Read(name, kMaxInputListBytes, Links::kRefuse);
    Status s = list.ok() ? ReadInputList(*list, files.Where(name), &m.provenance) : list.status();
    if (!s.ok()) report.problems.push_back(s.message());
  }
  CheckRemovedList(files, m, &report);
  return report;
}

// A bare Megatron prefix: no checksums and no vocabulary to check against,
// so only the index itself and its agreement with the .bin are checked.
VerifyReport VerifyPrefix(const std::string& prefix) {
  VerifyReport report;
  const std::string idx_path = prefix + ".idx", bin_path = prefix + ".bin";
  StatusOr<uint64_t> bin_size = FileSize(bin_path);
  if (!bin_size.ok()) report.problems.push_back(bin_size.status().message());
  StatusOr<std::string> bytes = ReadFileToString(idx_path);
  if (!bytes.ok()) {
    report.problems.push_back(bytes.status().message());
    return report;
  }
  ++report.files_checked;
  report.bytes_checked += bytes->size();
  StatusOr<IdxView> idx = ParseIdx(*bytes, idx_path);
  if (!idx.ok()) {
    report.problems.push_back(idx.status().message());
  } else if (bin_size.ok() && idx->bin_bytes() != *bin_size) {
    report.problems.push_back(idx_path + ": describes " + std::to_string(idx->bin_bytes()) +
                              " bytes of tokens but the .bin has " + std::to_string(*bin_size));
  }
  report.unchecked.push_back(prefix +
                             " is a bare Megatron prefix: no manifest.json, so no checksums to "
                             "compare the token data with (tokpack import records them)");
  report.unchecked.push_back("the vocabulary is unknown, so token ids were not range-checked");
  return report;
}

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

StatusOr<VerifyReport> VerifyDataset(const std::string& path, const StorageOptions& storage,
                                     const std::function<void(uint64_t)>& on_bytes) {
  if (IsRemoteUrl(path)) {
    TOKPACK_ASSIGN_OR_RETURN(ObjectLocation location, ResolveObjectUrl(path, storage));
    std::string url = path;
    while (!url.empty() && url.back() == '/') url.pop_back();
    RemoteFiles files(url, std::move(location), storage);
    StatusOr<std::string> text =
        files.Read(Manifest::kFileName, Manifest::kMaxJsonBytes, Links::kFollow);
    if (!text.ok() && text.status().code() == StatusCode::kNotFound) {
      return NotFoundError(url + " is not a tokpack dataset: " + text.status().message());
    }
    TOKPACK_RETURN_IF_ERROR(text.status());
    TOKPACK_ASSIGN_OR_RETURN(Manifest m, Manifest::Parse(*text, files.Where(Manifest::kFileName)));
    return VerifyWithManifest(files, std::move(m), on_bytes);
  }
  const std::string prefix = StripShardExtension(path);
  if (!IsFile(JoinPath(path, Manifest::kFileName)) &&
      (IsFile(prefix + ".idx") || IsFile(prefix + ".bin"))) {
    return VerifyPrefix(prefix);
  }
  // Also the errors for a missing path and a directory without a manifest.
  TOKPACK_ASSIGN_OR_RETURN(Manifest m, Manifest::Load(path));
  return VerifyWithManifest(LocalFiles(path), std::move(m), on_bytes);
}

}  // namespace tokpack
