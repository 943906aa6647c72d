// Dataset: an opened tokpack dataset (or a bare Megatron .bin/.idx prefix),
// memory-mapped, seen as one logical token stream: shards in manifest order,
// documents in order. Opening maps each shard and checks every entry of its
// .idx (an untrusted file) against the index rules and its .bin's size, one
// vectorized pass (a few ms per million documents); it reads no tokens
// unless DatasetOptions::verify_on_open, and builds or caches nothing on disk.
//
// Opened with DatasetOptions::split, a Dataset is one part of a held-out
// split: a view of the runs of documents dealt to that part from across the
// whole dataset, its stream the concatenation of those ranges, each a shard
// of the view. Every method then answers for the view (counts, reads,
// document indices and stream offsets, num_shards(), manifest()).
//
// A Dataset is immutable once opened; every method is safe to call from many
// threads at once. Share it as std::shared_ptr (loaders keep it alive).
//
// A dataset with loss masks maps (or, remote, caches) each shard's .mask
// beside its .bin; ReadLossMask reads the bits as the loader's labels use them.
//
// A dataset may list removed documents in removed.json beside its manifest
// (docs/format.md 17; tokpack::RemoveDocuments writes it), read when it is
// opened: their tokens read as pad_token() and carry no loss, while counts,
// extents, document starts, samples, packing and fingerprint stay as they
// were, so a cursor saved before the removal resumes exactly.
#ifndef TOKPACK_DATASET_H_
#define TOKPACK_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokpack/manifest.h"
#include "tokpack/options.h"
#include "tokpack/status.h"
#include "tokpack/storage.h"

namespace tokpack {

// How a dataset is opened. Each field is declared once, in the table in
// src/reader/dataset_options.cc, from which tokpack.Dataset's keyword
// arguments and the CLI's flags are made.
struct DatasetOptions : OptionSet<DatasetOptions> {
  // Reads every local shard's .bin and .idx at open and compares each chunk
  // with the manifest's checksum: DataLoss naming the file and the chunk.
  // Without it a damaged token byte is served as it is (verify finds it).
  // Remote chunks are checked against the manifest on every fetch anyway,
  // so this adds nothing there; a bare Megatron prefix has no checksums, so
  // asking for it there is FailedPrecondition.
  bool verify_on_open = false;
  // A held-out split: weights such as "949,50,1" (non-negative numbers, at
  // least one positive). Empty: the whole dataset. The Dataset opened is
  // part `split_index` of it (0-based): the runs of consecutive documents
  // (about 4096 in all) a keyed permutation deals to it, in proportion to
  // its weight (src/reader/split_ranges.h; docs/reader.md, "Held-out splits").
  std::string split;
  int64_t split_index = 0;
};

class Dataset {
 public:
  // `path` is a dataset directory (with manifest.json) or a Megatron prefix
  // (path/to/name for name.bin + name.idx; a ".bin"/".idx" suffix is
  // accepted). For a prefix, a manifest is made in memory (no checksums).
  // NotFound if neither exists; DataLoss if a .bin's size disagrees with its
  // .idx or the manifest; InvalidArgument for an unsupported dtype. An
  // s3://, gs:// or http(s):// URL opens a remote dataset (manifest
  // required) through `storage`'s credentials, cache and retries. DataLoss
  // names the file and the entry of an .idx that breaks the index rules
  // (docs/format.md 4.2), and with options.verify_on_open the first chunk
  // whose checksum differs. InvalidArgument for a bad split or split_index,
  // or a part with no documents (naming the dataset, split and part). A
  // removed.json beside the manifest is read and checked (docs/format.md
  // 17): InvalidArgument naming it when malformed, FailedPrecondition when
  // it was made for another version of the dataset (another fingerprint).
  static StatusOr<std::shared_ptr<Dataset>> Open(const std::string& path,
                                                 const StorageOptions& storage,
                                                 const DatasetOptions& options);
  // Open(path, storage, DatasetOptions()).
  static StatusOr<std::shared_ptr<Dataset>> Open(const std::string& path,
                                                 const StorageOptions& storage);
  // Open(path, StorageOptions()): enough for local datasets. It does not read
  // the environment, so a URL fails for want of a cache directory; pass
  // StorageOptions::FromEnvironment() for the documented variables.
  static StatusOr<std::shared_ptr<Dataset>> Open(const std::string& path);
  // Open(path, storage, options) of each of `paths`, side by side on at most
  // storage.prefetch_threads threads (many remote datasets open in the time
  // of a few manifest fetches), in the order given. The first failure in
  // that order is returned (it names its dataset); the others are dropped.
  static StatusOr<std::vector<std::shared_ptr<Dataset>>> OpenAll(
      const std::vector<std::string>& paths, const StorageOptions& storage,
      const DatasetOptions& options);
  ~Dataset();
  Dataset(const Dataset&) = delete;
  Dataset& operator=(const Dataset&) = delete;

  const std::string& path() const;
  // The manifest; for a split, one shard entry per range of the part (the
  // shard's path, the range's tokens and documents; the file digests stay
  // the whole files'; with loss masks the range's trainable_tokens, counted
  // in a local mask at open, or for a remote dataset, which reads no mask
  // at open, the shard's count scaled to the range's tokens).
  const Manifest& manifest() const;
  TokenDtype dtype() const;
  uint64_t num_tokens() const;
  uint64_t num_documents() const;
  size_t num_shards() const;
  // Manifest::Fingerprint(): identifies the token stream (used by cursors).
  // For a split, a hash of it, the normalized split and the part, so each
  // part has its own (docs/format.md, section 7).
  uint64_t fingerprint() const;
  // Where shard k's part of the stream begins in its .bin, in tokens: 0, or
  // for a split the first token of range k. k < num_shards().
  uint64_t shard_token_offset(size_t k) const;

  // Copies tokens [begin, begin + count) of the stream into `out`, widened.
  // OutOfRange past the end. `out` must hold `count` values. Remote reads
  // count their cache hits and downloads in `*stats` (may be null).
  Status ReadTokens(uint64_t begin, uint64_t count, int32_t* out, ReadStats* stats = nullptr) const;
  Status ReadTokens(uint64_t begin, uint64_t count, int64_t* out, ReadStats* stats = nullptr) const;
  // As ReadTokens, but copies the tokens as stored (dtype(), little-endian):
  // `out` must hold count * TokenDtypeSize(dtype()) bytes.
  Status ReadStoredTokens(uint64_t begin, uint64_t count, void* out,
                          ReadStats* stats = nullptr) const;

  // Documents on the dataset's removal list (removed.json) when it was
  // opened; of a split, those in its part. 0 without a list.
  uint64_t num_removed() const;
  // Whether document `i` is removed: its tokens read as pad_token() and it
  // carries no loss. False past the end. O(log removed).
  bool is_removed(uint64_t i) const;
  // What a removed token reads as, and what pads a packed row: the
  // tokenizer's pad id, else its eos id, else 0.
  int64_t pad_token() const;

  // Whether the dataset has loss masks (docs/format.md 3.1, supervised
  // fine-tuning data): then some tokens' labels are ignored in training.
  // Without masks every token carries loss.
  bool has_loss_masks() const;
  // One byte per token of [begin, begin + count) of the stream into `out`
  // (which must hold `count`): 1 where the token carries loss, 0 where its
  // label is to be ignored (-100): where the mask says so, and on removed
  // documents; all 1 without masks and removals. A split's view reads
  // its ranges' bits, aligned with ReadTokens. OutOfRange past the end;
  // remote masks are read through the chunk cache, each chunk checked
  // against the manifest (DataLoss naming it), counting in `*stats`.
  Status ReadLossMask(uint64_t begin, uint64_t count, uint8_t* out,
                      ReadStats* stats = nullptr) const;

  // A hint that tokens [begin, begin + count) will be read at step `step`
  // (any count that grows with time; the Loader passes its global step):
  // shards in remote storage fetch them in the background, the smallest
  // step first (a chunk hinted again for an earlier step moves up), behind
  // every read that needs a chunk now, counting in `*stats` (may be null;
  // kept alive until those fetches are done). Never blocks. Destroying the
  // Dataset drops the fetches not yet started and waits for those in flight.
  void Prefetch(uint64_t begin, uint64_t count, int64_t step,
                const std::shared_ptr<ReadStats>& stats = nullptr) const;
  // A hint that this thread reads tokens [begin, begin + count) soon, in
  // microseconds: where they lie in a memory-resident shard, their first
  // cache lines are prefetched into the CPU's caches, so that reads of many
  // short ranges at random places (packed rows' pieces) overlap their
  // misses. Nothing for remote shards (see Prefetch) or past the end.
  void PrefetchToCache(uint64_t begin, uint64_t count) const;
  // True when the shards are read from remote storage (s3://, gs://, http(s)://).
  bool remote() const;
  // For a remote dataset opened by Open(), the size limit of the chunk cache
  // it reads through (StorageOptions::cache_bytes); else 0.
  uint64_t cache_bytes() const;
  // The StorageOptions::cache_dir it was opened with (empty by Open(path)):
  // where its remote chunks are cached, and where packing plans go when the
  // dataset's own directory is not writable (docs/format.md).
  const std::string& cache_dir() const;
  // False for a bare Megatron prefix: manifest() was made in memory from the
  // .idx headers (no tokenizer, no checksums).
  bool has_manifest() const;

  // Appends to *starts the stream offsets of the documents that start in
  // [begin, end), in increasing order.
  void DocumentStarts(uint64_t begin, uint64_t end, std::vector<uint64_t>* starts) const;

  // Stream offset and length (in tokens) of document `i`; OutOfRange past the end.
  Status DocumentExtent(uint64_t i, uint64_t* offset, uint64_t* length) const;

  // Document `i`'s tokens as stored (dtype()), in place: `data` points into
  // the shard's mapping and stays valid and unchanged while this Dataset
  // lives. OutOfRange past the end; FailedPrecondition when the shard is not
  // memory-resident or the document is removed (use ReadTokens then, which
  // reads a removed one as pad tokens). An empty document's data may be null.
  struct TokenView {
    const void* data = nullptr;
    uint64_t length = 0;  // In tokens.
  };
  StatusOr<TokenView> DocumentView(uint64_t i) const;

  // Document sources (docs/format.md 3.2): where a build read each document.
  // Present when the manifest lists a .src beside every shard.
  bool has_sources() const;
  struct DocumentSource {
    uint64_t input = 0;      // Index into the manifest's inputs.
    std::string input_path;  // Its path (as Inputs() lists it).
    uint64_t record = 0;     // 1-based line, Parquet row or item; 0: a whole file.
    bool has_id = false;
    std::string id;
  };
  // Where document `i` came from; OutOfRange past the end, FailedPrecondition
  // without sources, DataLoss (naming the file) for a damaged .src. Reads the
  // shard's runs once, then one id block: O(log n), remote or local.
  StatusOr<DocumentSource> Source(uint64_t i) const;
  // The inputs of the build, in the order DocumentSource::input numbers
  // them: the manifest's, or its side file's (inputs.jsonl, past 1000
  // inputs), read on first use and checked against the manifest's count
  // and hash (DataLoss naming the file otherwise).
  StatusOr<std::vector<InputRecord>> Inputs() const;
  // The documents whose id is `id`, in order (ids need not be unique).
  // O(log n) per shard through each .src's sorted id hashes.
  StatusOr<std::vector<uint64_t>> FindById(std::string_view id) const;
  // The document made from record `record` of input `input`, or none (the
  // record was skipped, blank or empty, or lies outside this view).
  // O(log shards + log runs).
  StatusOr<std::optional<uint64_t>> FindByRecord(uint64_t input, uint64_t record) const;

  // The library's own state of a dataset, defined only inside it (the
  // storage and format layers open it): users get Datasets from Open().
  struct Impl;
  explicit Dataset(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokpack

#endif  // TOKPACK_DATASET_H_
