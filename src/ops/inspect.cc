#include <algorithm>

#include "format/dataset_path.h"
#include "io/file_system.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/json_writer.h"
#include "tokpack/storage.h"

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

StatusOr<std::unique_ptr<Tokenizer>> LoadDatasetTokenizer(const Dataset& dataset,
                                                          const StorageOptions& storage) {
  const TokenizerInfo& recorded = dataset.manifest().tokenizer;
  if (recorded.file.empty()) {
    return InvalidArgumentError(dataset.path() + " holds no tokenizer" +
                                (dataset.has_manifest() ? "" : " (a bare Megatron prefix)"));
  }
  // Read into memory, then checked against the recorded hash before it is
  // parsed: no temporary or cached file another process could swap.
  const std::string where = dataset.path() + "/" + recorded.file;
  StatusOr<std::string> bytes =
      dataset.remote()
          ? ReadObject(dataset.path(), recorded.file, storage, kMaxTokenizerBytes)
          : ReadDatasetFile(dataset.path(), recorded.file, kMaxTokenizerBytes, Links::kRefuse);
  if (!bytes.ok()) return bytes.status();
  return Tokenizer::FromRecorded(*bytes, where, recorded);
}

}  // namespace tokpack
