#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "io/file_system.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/json_writer.h"

namespace tokpack {

DatasetInfo InspectDataset(const Dataset& dataset) {
  DatasetInfo info;
  info.path = dataset.path();
  info.has_manifest = dataset.has_manifest();
  info.manifest = dataset.manifest();
  for (const ShardInfo& shard : info.manifest.shards) {
    info.data_bytes += shard.bin.bytes + shard.idx.bytes;
  }
  // A bucket for every uint64 length: opening checks index headers only,
  // so a damaged index can hold any length here (verify finds it).
  info.length_histogram.assign(64, 0);
  const uint64_t docs = dataset.num_documents();
  for (uint64_t i = 0; i < docs; ++i) {
    uint64_t offset = 0, len = 0;
    if (!dataset.DocumentExtent(i, &offset, &len).ok()) break;  // Only past the end.
    const int bucket = len == 0 ? 0 : 63 - __builtin_clzll(len);
    ++info.length_histogram[bucket];
    info.min_length = i == 0 ? len : std::min(info.min_length, len);
    info.max_length = std::max(info.max_length, len);
  }
  while (!info.length_histogram.empty() && info.length_histogram.back() == 0) {
    info.length_histogram.pop_back();
  }
  return info;
}

std::string DatasetInfoToJson(const DatasetInfo& info) {
  const Manifest& m = info.manifest;
  JsonWriter w;
  w.BeginObject();
  w.String("dataset", info.path);
  w.Bool("has_manifest", info.has_manifest);
  w.String("fingerprint", HashToHex(m.Fingerprint()));
  w.String("dtype", TokenDtypeName(m.dtype));
  w.UInt("tokens", m.TotalTokens());
  w.UInt("documents", m.TotalDocuments());
  w.UInt("shards", m.shards.size());
  w.UInt("data_bytes", info.data_bytes);
  w.Int("vocab_size", m.tokenizer.vocab_size);
  w.Int("bos_id", m.tokenizer.bos_id);
  w.Int("eos_id", m.tokenizer.eos_id);
  w.UInt("min_doc_tokens", info.min_length);
  w.UInt("max_doc_tokens", info.max_length);
  w.BeginArray("doc_length_log2_histogram");
  for (uint64_t n : info.length_histogram) w.UInt(n);
  w.EndArray();
  w.EndObject();
  return w.str();
}

namespace {

// Downloads a remote dataset's tokenizer file into a temporary file (the
// loaders read files), loads it and removes the file.
StatusOr<std::unique_ptr<Tokenizer>> LoadRemoteTokenizer(const Dataset& dataset,
                                                         const StorageOptions& storage) {
  const TokenizerInfo& recorded = dataset.manifest().tokenizer;
  TOKPACK_ASSIGN_OR_RETURN(std::string bytes,
                           ReadObject(dataset.path(), recorded.file, storage, kMaxTokenizerBytes));
  const std::filesystem::path tmp(storage.temp_dir);
  // The recorded file's extension is kept: it is part of how a model is named.
  const std::string ext = std::filesystem::path(recorded.file).extension().string();
  std::string path = (tmp / "tokpack-tokenizer-XXXXXX").string() + ext;
  const int fd = ::mkstemps(path.data(), static_cast<int>(ext.size()));
  if (fd < 0) return ErrnoToStatus(errno, "mkstemps", path);
  Status written = Status::Ok();
  for (size_t done = 0; done < bytes.size() && written.ok();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) written = ErrnoToStatus(errno, "write", path);
    if (n > 0) done += static_cast<size_t>(n);
  }
  ::close(fd);
  StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      written.ok() ? Tokenizer::LoadRecorded(path, recorded) : written;
  ::unlink(path.c_str());
  if (!tokenizer.ok()) return tokenizer.status().WithContext(dataset.path() + "/" + recorded.file);
  return tokenizer;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadDatasetTokenizer(const Dataset& dataset,
                                                          const StorageOptions& storage) {
  const TokenizerInfo& recorded = dataset.manifest().tokenizer;
  if (recorded.file.empty()) {
    return InvalidArgumentError(dataset.path() + " holds no tokenizer" +
                                (dataset.has_manifest() ? "" : " (a bare Megatron prefix)"));
  }
  if (dataset.remote()) return LoadRemoteTokenizer(dataset, storage);
  return Tokenizer::LoadRecorded(JoinPath(dataset.path(), recorded.file), recorded);
}

}  // namespace tokpack
