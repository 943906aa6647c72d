#include <algorithm>

#include "base/file_system.h"
#include "format/dataset_path.h"
#include "reader/split_ranges.h"
#include "tokpack/dataset_ops.h"
#include "tokpack/json_writer.h"
#include "tokpack/storage.h"

namespace tokpack {

DatasetInfo InspectDataset(const Dataset& dataset) {
  DatasetInfo info;
  info.path = dataset.path();
  info.has_manifest = dataset.has_manifest();
  info.manifest = dataset.manifest();
  info.removed_documents = dataset.num_removed();
  for (const ShardInfo& shard : info.manifest.shards) {
    info.data_bytes += shard.bin.bytes + shard.idx.bytes + (shard.has_mask ? shard.mask.bytes : 0);
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

Status InspectSplit(const Dataset& dataset, const std::string& split, DatasetInfo* info) {
  TOKPACK_ASSIGN_OR_RETURN(const SplitSpec spec, ParseSplit(split));
  info->split = split;
  info->normalized_split = spec.Normalized();
  info->split_parts.assign(spec.parts(), {});
  // The stream offset where document i starts (the end, past the last).
  const auto start = [&dataset](uint64_t i) {
    uint64_t offset = dataset.num_tokens(), length = 0;
    if (i < dataset.num_documents()) dataset.DocumentExtent(i, &offset, &length).IgnoreError();
    return offset;
  };
  std::vector<uint64_t> shard_documents;
  for (const ShardInfo& shard : dataset.manifest().shards)
    shard_documents.push_back(shard.documents);
  const SplitRuns runs(spec, shard_documents);
  info->split_run_documents = runs.run_documents();
  info->split_runs = runs.runs();
  uint64_t first = 0;  // The shard's first document.
  for (size_t k = 0; k < shard_documents.size(); ++k) {
    for (const SplitRuns::Dealt& d : runs.Deal(k)) {
      DatasetInfo::SplitPart& part = info->split_parts[d.part];
      part.documents += d.range.end - d.range.begin;
      part.tokens += start(first + d.range.end) - start(first + d.range.begin);
    }
    first += shard_documents[k];
  }
  for (size_t j = 0; j < spec.parts(); ++j) {
    info->split_parts[j].runs = runs.RunsOf(j);
    info->split_parts[j].weight = spec.weights[j];
    info->split_parts[j].fingerprint = SplitFingerprint(dataset.fingerprint(), spec, j);
  }
  return Status::Ok();
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
  w.Bool("loss_masks", m.HasLossMasks());
  // Without masks every token carries loss.
  w.UInt("trainable_tokens", m.TrainableTokens());
  w.UInt("documents", m.TotalDocuments());
  // On the removal list (removed.json): counted in documents, read as pad.
  w.UInt("removed_documents", info.removed_documents);
  // Document sources (docs/format.md 3.2): whether lookups work, and the
  // bytes they take beside the data.
  w.Bool("doc_sources", m.HasSources());
  uint64_t source_bytes = 0;
  for (const ShardInfo& s : m.shards) source_bytes += s.has_sources ? s.sources.bytes : 0;
  w.UInt("source_bytes", source_bytes);
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
  if (!info.split.empty()) {
    w.BeginObject("split");
    w.String("text", info.split);
    w.String("normalized", info.normalized_split);
    w.UInt("run_documents", info.split_run_documents);
    w.UInt("runs", info.split_runs);
    w.BeginArray("parts");
    for (const DatasetInfo::SplitPart& p : info.split_parts) {
      w.BeginObject();
      w.UInt("weight", p.weight);
      w.UInt("runs", p.runs);
      w.UInt("documents", p.documents);
      w.UInt("tokens", p.tokens);
      w.String("fingerprint", HashToHex(p.fingerprint));
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  if (const std::optional<PackingInfo>& p = info.packing) {
    w.BeginObject("packing");
    w.String("packing", "best_fit");
    w.Int("seq_len", p->seq_len);
    w.Int("max_docs_per_sequence", p->max_docs_per_sequence);
    w.UInt("bins", p->bins);
    w.UInt("documents", p->documents);
    w.UInt("empty_documents", p->empty_documents);
    w.UInt("truncated_documents", p->truncated_documents);
    w.UInt("pieces", p->pieces);
    w.UInt("tokens", p->tokens);
    w.UInt("padding_tokens", p->padding_tokens);
    w.Double("padding_fraction", p->padding_fraction);
    w.Double("mean_pieces_per_bin", p->mean_pieces_per_bin);
    w.UInt("max_pieces_per_bin", p->max_pieces_per_bin);
    w.InlineStringArray("plan_files", p->plan_files);
    w.EndObject();
  }
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
